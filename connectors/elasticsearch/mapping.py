"""Elasticsearch mappings from Connect schemas (Confluent's ``Mapping`` type table), and
the conflicts between a mapping the server has and the one a schema implies."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import Date, Decimal, Schema, Time, Timestamp, Type

__all__ = ["MappingConflict", "conflicts", "mapping_for"]

_PRIMITIVES = {
    Type.INT8: "byte", Type.INT16: "short", Type.INT32: "integer", Type.INT64: "long",
    Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean",
    Type.BYTES: "binary",
}
_LOGICAL = {Date.LOGICAL_NAME: "date", Time.LOGICAL_NAME: "date",
            Timestamp.LOGICAL_NAME: "date", Decimal.LOGICAL_NAME: "double"}
#: Strings are full-text with a keyword sub-field, as Confluent maps them.
_STRING = {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}


def mapping_for(schema: Schema) -> dict[str, Any]:
    """The ``mappings`` body for documents of ``schema`` (a struct or map at the top)."""
    field = _field_mapping(schema)
    return {"properties": field.get("properties", {})}


def _field_mapping(schema: Schema) -> dict[str, Any]:
    if schema.name in _LOGICAL:
        return {"type": _LOGICAL[schema.name]}
    t = schema.type
    if t in _PRIMITIVES:
        return {"type": _PRIMITIVES[t]}
    if t is Type.STRING:
        return {"type": "text", "fields": {"keyword": dict(_STRING["fields"]["keyword"])}}
    if t is Type.ARRAY:
        return _field_mapping(schema.value_schema)  # a field holds one value or many alike
    if t is Type.MAP:
        return {"properties": {"key": _field_mapping(schema.key_schema),
                               "value": _field_mapping(schema.value_schema)}}
    return {"properties": {f.name: _field_mapping(f.schema) for f in schema.fields}}


@dataclass(frozen=True)
class MappingConflict:
    """A field whose type on the server differs from the schema's."""

    path: str
    server_type: str
    schema_type: str

    def __str__(self) -> str:
        return (f"field '{self.path}' is '{self.server_type}' in the index but "
                f"'{self.schema_type}' in the record schema")


_INTEGERS = {"byte", "short", "integer", "long", "unsigned_long"}
_FLOATS = {"float", "double", "half_float", "scaled_float"}


def _compatible(server: str, schema: str) -> bool:
    """Whether values of the schema type index into a field of the server type."""
    if server == schema:
        return True
    if server in ("text", "keyword", "match_only_text", "wildcard"):
        return schema not in ("object",)  # primitives are coerced to strings
    if server in _FLOATS:
        return schema in _INTEGERS | _FLOATS
    if server in _INTEGERS:
        return schema in _INTEGERS and _width(schema) <= _width(server)
    return False


def _width(t: str) -> int:
    return ["byte", "short", "integer", "long", "unsigned_long"].index(t)


def conflicts(server: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[MappingConflict]:
    """Fields present in both mappings whose types do not agree; fields only one side
    has are no conflict (the server adds them dynamically)."""
    return list(_walk(server.get("properties", {}), wanted.get("properties", {}), ""))


def _walk(server: Mapping[str, Any], wanted: Mapping[str, Any],
          prefix: str) -> Iterator[MappingConflict]:
    for name, want in wanted.items():
        have = server.get(name)
        if have is None:
            continue
        path = prefix + name
        have_type = have.get("type", "object")
        want_type = want.get("type", "object")
        if want_type == "object" and have_type in ("object", "nested"):
            yield from _walk(have.get("properties", {}), want.get("properties", {}),
                             path + ".")
        elif not _compatible(have_type, want_type):
            yield MappingConflict(path, have_type, want_type)


def new_fields(server: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The top-level ``wanted`` properties the server's mapping lacks (to add with a put
    mapping when a schema gains fields)."""
    have = server.get("properties", {})
    return {k: v for k, v in wanted.get("properties", {}).items() if k not in have}
