"""Helpers on Connect schemas that both mappings (Avro and JSON Schema) use."""

from __future__ import annotations

from connect.api.data import Schema, Type

__all__ = ["non_optional"]


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
