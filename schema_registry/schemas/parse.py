"""``parse_schema``: the one entry point from schema text to a ParsedSchema."""

from __future__ import annotations

from collections.abc import Sequence

from .avro import parse_avro
from .base import ParsedSchema, Reference, Resolve
from .errors import SchemaError
from .json_schema import parse_json_schema

SCHEMA_TYPES = ("AVRO", "JSON")


def parse_schema(
    schema_type: str | None,
    schema: str,
    references: Sequence[Reference] = (),
    resolve: Resolve | None = None,
    *,
    normalize: bool = False,
) -> ParsedSchema:
    """Parse ``schema`` of ``schema_type`` ("AVRO" when None or empty, as in Confluent).

    ``resolve(ref)`` returns ``(schema_type, schema_text, references)`` of a referenced
    subject version, transitively. Raises SchemaError (UnresolvedReferenceError for a
    reference that cannot be found) with a message naming the problem.
    """
    kind = (schema_type or "AVRO").upper()
    if not isinstance(schema, str):
        raise SchemaError(f"The schema must be a string, got {type(schema).__name__}")
    if kind == "AVRO":
        return parse_avro(schema, references, resolve, normalize=normalize)
    if kind == "JSON":
        return parse_json_schema(schema, references, resolve, normalize=normalize)
    raise SchemaError(
        f"Unsupported schema type '{schema_type}'; this registry supports {', '.join(SCHEMA_TYPES)}"
    )
