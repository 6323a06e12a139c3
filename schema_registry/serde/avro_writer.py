"""Connect values to Avro datums (what fastavro writes), as ``AvroData.fromConnectData``.

``compile_writer(schema, node)`` returns a function for values of one Connect schema and
the Avro node ``FromConnect`` made of it, built once per schema: structs become dicts by
Avro field name (an unset field takes its default unless
``ignore.default.for.nullables``), string-keyed maps dicts, other maps lists of
``{"key", "value"}`` records, logical values their Avro encodings (Decimal bytes, days,
milliseconds), and union values fastavro's ``(member name, value)`` tuples so the member
is never guessed. Schemaless values use Confluent's ``Anything`` record.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from connect.api.data import Decimal, Schema, Struct, Type
from connect.api.errors import DataError
from schema_registry.serde import avro_names as n
from schema_registry.serde.avro_compile import Compiler, Convert, each_item, each_value, identity
from schema_registry.serde.avro_from_connect import Node, branch_name, is_union
from schema_registry.serde.connect_schema import temporal_type

__all__ = ["Writer", "compile_writer", "to_anything"]

Writer = Convert


def compile_writer(schema: Schema, node: Node, config: n.AvroDataConfig) -> Writer:
    """A function from values of ``schema`` to datums of ``node``."""
    return _Compiler(config).compile(schema, node)


class _Compiler(Compiler):
    def compile(self, schema: Schema, node: Node) -> Writer:
        if is_union(schema):
            return self._union(schema, node)
        if isinstance(node, list):
            # an optional schema: ["null", T] or [T, "null"]
            member = next(m for m in node if m != "null")
            inner = self._present(schema, member)
            name = branch_name(member)

            def optional(value: Any) -> Any:
                return None if value is None else (name, inner(value))

            return optional
        return self._present(schema, node)

    def _present(self, schema: Schema, node: Node) -> Writer:
        if schema.name == Decimal.LOGICAL_NAME:
            size = node["size"] if isinstance(node, dict) and node["type"] == "fixed" else None
            return _decimal_writer(schema, size)
        temporal = temporal_type(schema)
        if temporal is not None:
            from_logical = temporal.from_logical
            return lambda v: from_logical(schema, v)
        kind = schema.type
        if kind is Type.BYTES:
            return lambda v: v if type(v) is bytes else bytes(v)
        if kind is Type.ARRAY:
            return each_item(self.compile(schema.value_schema, node["items"]))
        if kind is Type.MAP:
            return self._map(schema, node)
        if kind is Type.STRUCT:
            return self._struct(schema, node)
        return identity

    def _map(self, schema: Schema, node: Node) -> Writer:
        if node["type"] == "map":
            return each_value(self.compile(schema.value_schema, node["values"]))
        entry = node["items"]
        key_node, value_node = (f["type"] for f in entry["fields"])
        keys = self.compile(schema.key_schema, key_node)
        values = self.compile(schema.value_schema, value_node)
        return lambda v: [{n.KEY_FIELD: keys(k), n.VALUE_FIELD: values(x)} for k, x in v.items()]

    def _struct(self, schema: Schema, node: Node) -> Writer:
        fields = self.fields(schema, node)
        with_defaults = not self.config.ignore_default_for_nullables

        def struct(value: Any) -> Any:
            _check_struct(schema, value)
            values = value.values(with_defaults=with_defaults)
            return {name: write(v) for (name, write), v in zip(fields, values, strict=True)}

        return struct

    def _union(self, schema: Schema, node: Node) -> Writer:
        members = [m for m in node if m != "null"]
        # a member's value is checked against the field's own (optional) schema
        branches = [(f.index, branch_name(m), self._present(f.schema, m))
                    for f, m in zip(schema.fields, members, strict=True)]
        optional = schema.optional
        with_defaults = not self.config.ignore_default_for_nullables

        def union(value: Any) -> Any:
            if value is None:
                return None
            _check_struct(schema, value)
            values = value.values(with_defaults=with_defaults)
            for index, name, write in branches:
                if values[index] is not None:
                    return (name, write(values[index]))
            if optional:
                return None
            raise DataError(f"No field of the union struct {schema.name} is set, and the "
                            "union has no null member")

        return union


def _check_struct(schema: Schema, value: Any) -> None:
    if type(value) is not Struct:
        raise DataError(f"Invalid type for STRUCT: {type(value).__name__}")
    if value.schema is not schema and not value.schema.equals_ignoring_default(schema):
        raise DataError(f"Mismatching struct schema: expected {schema!r}, got "
                        f"{value.schema!r}")


def _decimal_writer(schema: Schema, fixed_size: int | None) -> Writer:
    if fixed_size is None:
        return lambda v: Decimal.from_logical(schema, v)

    def fixed(value: decimal.Decimal) -> bytes:
        data = Decimal.from_logical(schema, value)
        if len(data) > fixed_size:
            raise DataError(f"Decimal {value} needs {len(data)} bytes but the Avro fixed "
                            f"type holds {fixed_size}")
        pad = b"\xff" if data and data[0] & 0x80 else b"\x00"
        return pad * (fixed_size - len(data)) + data

    return fixed


def to_anything(value: Any) -> dict[str, Any]:
    """A schemaless value as Confluent's ``Anything`` record (one field set)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolean": value}
    if isinstance(value, int):
        return {"long": value}
    if isinstance(value, float):
        return {"double": value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": bytes(value)}
    if isinstance(value, list | tuple):
        return {"array": [to_anything(e) for e in value]}
    if isinstance(value, dict):
        return {"map": [{n.KEY_FIELD: to_anything(k), n.VALUE_FIELD: to_anything(v)}
                        for k, v in value.items()]}
    kind = type(value).__name__
    hint = (" (logical values need a schema)"
            if isinstance(value, decimal.Decimal | dt.date | dt.time | Struct) else "")
    raise DataError(f"Unknown Python type for schemaless data: {kind}{hint}")
