"""Helpers on Connect schemas that both mappings (Avro and JSON Schema) use."""

from __future__ import annotations

from collections.abc import Mapping

from connect.api.data import Date, Schema, Time, Timestamp, Type

__all__ = ["Temporal", "non_optional", "temporal_type"]

Temporal = type[Date] | type[Time] | type[Timestamp]

_TEMPORAL: Mapping[str, Temporal] = {
    Date.LOGICAL_NAME: Date,
    Time.LOGICAL_NAME: Time,
    Timestamp.LOGICAL_NAME: Timestamp,
}


def temporal_type(schema: Schema) -> Temporal | None:
    """The logical type of ``schema`` when it is one Connect holds as an integer (Date:
    days; Time and Timestamp: milliseconds), else None. Both formats write such values
    as that integer (``from_logical``) and read them back with ``to_logical``."""
    return _TEMPORAL.get(schema.name) if schema.name is not None else None


def non_optional(schema: Schema) -> Schema:
    """``schema`` with ``optional`` False, everything else kept."""
    if not schema.optional:
        return schema
    return Schema(
        schema.type, optional=False, default_value=schema.default_value, name=schema.name,
        version=schema.version, doc=schema.doc, parameters=schema.parameters,
        fields=schema.fields if schema.type is Type.STRUCT else None,
        key_schema=schema.key_schema if schema.type is Type.MAP else None,
        value_schema=schema.value_schema if schema.type in (Type.MAP, Type.ARRAY) else None,
    )
