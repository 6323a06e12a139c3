"""Compatibility levels: which previous versions a new schema is checked against, and how.

BACKWARD: the new schema (reader) reads data written with the previous one (writer).
FORWARD: the previous schema reads data written with the new one. FULL: both.
The ``_TRANSITIVE`` levels check every previous version, newest first, and stop at the first
that fails (as Confluent's ``SchemaValidatorBuilder.validateAll`` does); the others check
only the latest. NONE checks nothing.

Messages follow Confluent's ``?verbose=true`` output: one ``{errorType:..., description:...}``
entry per incompatibility (the roles in the description are "new" and "old"), followed by
``{oldSchema: '...'}`` naming the previous schema the check failed against.
"""

from __future__ import annotations

from collections.abc import Sequence

from .avro import AvroSchema
from .avro_compat import check_avro
from .base import ParsedSchema
from .json_compat import diff
from .json_schema import JsonSchema

COMPATIBILITY_LEVELS = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
DIFFERENT_TYPES = "Incompatible because of different schema type"
NEW, OLD = "new", "old"


def reader_issues(reader: ParsedSchema, writer: ParsedSchema, reader_role: str,
                  writer_role: str) -> list[str]:
    """Why ``reader`` cannot read what ``writer`` wrote, in Confluent's message format."""
    if reader.schema_type != writer.schema_type:
        return [DIFFERENT_TYPES]
    if isinstance(reader, AvroSchema) and isinstance(writer, AvroSchema):
        return [i.describe(reader_role, writer_role) for i in check_avro(reader.root, writer.root)]
    if isinstance(reader, JsonSchema) and isinstance(writer, JsonSchema):
        differences = diff(writer.model().root, reader.model().root)
        return [d.describe(reader_role, writer_role) for d in differences if not d.compatible]
    raise TypeError(f"No compatibility rules for {reader.schema_type} schemas")


def _check_one(direction: str, new: ParsedSchema, old: ParsedSchema) -> list[str]:
    old_schema = f"{{oldSchema: '{old.canonical()}'}}"
    forward = reader_issues(old, new, OLD, NEW) if direction in ("FORWARD", "FULL") else []
    if direction == "FORWARD":
        return [*forward, old_schema] if forward else []
    # BACKWARD, or FULL: Confluent names the old schema after the backward part only
    backward = reader_issues(new, old, NEW, OLD)
    return [*forward, *backward, old_schema] if backward else forward


def check_compatibility(level: str, new: ParsedSchema,
                        existing: Sequence[ParsedSchema]) -> list[str]:
    """Incompatibility messages of ``new`` against ``existing`` (live versions, oldest first)
    under ``level``; an empty list means compatible."""
    normalized = level.upper()
    if normalized not in COMPATIBILITY_LEVELS:
        raise ValueError(f"Unknown compatibility level '{level}'; expected one of "
                         f"{', '.join(COMPATIBILITY_LEVELS)}")
    if normalized == "NONE" or not existing:
        return []
    direction, _, transitive = normalized.partition("_")
    previous = list(reversed(existing))
    for old in previous if transitive else previous[:1]:
        messages = _check_one(direction, new, old)
        if messages:
            return messages
    return []
