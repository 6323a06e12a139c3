"""The schema model: parsing, identity and compatibility of Avro and JSON schemas.

Pure logic, no I/O: ``parse_schema`` turns registered text into a ``ParsedSchema`` (whose
``fingerprint()`` decides "same schema, same id"), and ``check_compatibility`` applies a
compatibility level to a new schema and the live versions of a subject.
"""

from .avro import AvroSchema
from .base import ParsedSchema, Reference, Resolve
from .compatibility import COMPATIBILITY_LEVELS, check_compatibility
from .errors import SchemaError, UnresolvedReferenceError
from .json_schema import JsonSchema
from .json_text import MAX_NESTING, NestingError, load_json
from .parse import SCHEMA_TYPES, parse_schema

__all__ = [
    "COMPATIBILITY_LEVELS",
    "MAX_NESTING",
    "SCHEMA_TYPES",
    "AvroSchema",
    "JsonSchema",
    "NestingError",
    "ParsedSchema",
    "Reference",
    "Resolve",
    "SchemaError",
    "UnresolvedReferenceError",
    "check_compatibility",
    "load_json",
    "parse_schema",
]
