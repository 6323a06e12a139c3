"""Avro datums (what fastavro reads) to Connect values, as ``AvroData.toConnectData``.

``compile_reader(schema, node)`` is built once per (Connect schema, Avro node) pair that
``ToConnect`` produced. fastavro is asked for ``(name, value)`` tuples for named union
members, so a union struct's field is found by name; other members are matched by
Python type in the union's order (an integer goes to the first integer member whose range
holds it, a float to ``float`` only if float32 holds it exactly: fastavro does not say
which of two numeric members was written). Logical types arrive as their Avro
encodings (the schemas given to fastavro carry no ``logicalType``) and are decoded here.
Defaults given as Avro JSON go through ``json_to_datum`` and then the same readers.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from connect.api.data import Decimal, Schema, Struct, Type
from connect.api.errors import DataError
from schema_registry.serde import avro_names as n
from schema_registry.serde.avro_compile import Compiler, Convert, each_item, each_value, identity
from schema_registry.serde.avro_from_connect import Node, is_union, node_type
from schema_registry.serde.avro_to_connect import member_field_name
from schema_registry.serde.connect_schema import temporal_type

__all__ = ["Reader", "compile_reader", "default_from_json", "from_anything", "json_to_datum"]

Reader = Convert

_PYTHON_TYPES: dict[str, type] = {
    "boolean": bool, "int": int, "long": int, "float": float, "double": float,
    "string": str, "enum": str, "bytes": bytes, "fixed": bytes, "array": list,
    "map": dict, "record": dict,
}
_FLOAT32 = struct.Struct("<f")


def _fits(kind: str, value: Any) -> bool:
    """Whether a bare datum can belong to a union member of Avro type ``kind``: its
    Python type, and for int and float their narrower range."""
    python_type = _PYTHON_TYPES.get(kind)
    if python_type is None or not isinstance(value, python_type):
        return False
    if python_type is int:
        return not isinstance(value, bool) and (kind == "long" or -2**31 <= value < 2**31)
    if kind == "float":
        return value != value or _FLOAT32.unpack(_FLOAT32.pack(value))[0] == value
    return True


def compile_reader(schema: Schema, node: Node, config: n.AvroDataConfig) -> Reader:
    """A function from datums of ``node`` to values of ``schema``."""
    return _Compiler(config).compile(schema, node)


def default_from_json(config: n.AvroDataConfig) -> Callable[[Schema, Node, Any], Any]:
    """What ``ToConnect`` uses to read defaults: JSON default to Connect value."""
    def read(schema: Schema, node: Node, value: Any) -> Any:
        return compile_reader(schema, node, config)(json_to_datum(node, value))
    return read


class _Compiler(Compiler):
    def compile(self, schema: Schema, node: Node) -> Reader:
        if is_union(schema):
            return self._union(schema, [m for m in node if m != "null"])
        if isinstance(node, list):
            member = next(m for m in node if m != "null")
            inner = self._present(schema, member)

            def optional(datum: Any) -> Any:
                if datum is None:
                    return None
                if type(datum) is tuple:
                    datum = datum[1]
                return inner(datum)

            return optional
        inner = self._present(schema, node)
        if not schema.optional or inner is identity:
            return inner
        return lambda d: None if d is None else inner(d)

    def _present(self, schema: Schema, node: Node) -> Reader:
        if schema.name == Decimal.LOGICAL_NAME:
            return lambda d: Decimal.to_logical(schema, d)
        temporal = temporal_type(schema)
        if temporal is not None:
            to_logical = temporal.to_logical
            return lambda d: to_logical(schema, d)
        kind = schema.type
        if kind is Type.ARRAY:
            return each_item(self.compile(schema.value_schema, node["items"]))
        if kind is Type.MAP:
            if node_type(node) == "map":
                return each_value(self.compile(schema.value_schema, node["values"]))
            entry = {f["name"]: f["type"] for f in node["items"]["fields"]}
            keys = self.compile(schema.key_schema, entry[n.KEY_FIELD])
            values = self.compile(schema.value_schema, entry[n.VALUE_FIELD])
            return lambda d: {keys(e[n.KEY_FIELD]): values(e[n.VALUE_FIELD]) for e in d}
        if kind is Type.STRUCT:
            return self._struct(schema, node)
        return identity

    def _struct(self, schema: Schema, node: Node) -> Reader:
        fields = self.fields(schema, node)

        def struct(datum: Any) -> Struct:
            return Struct.from_values(schema, [read(datum.get(name)) for name, read in fields],
                                      validate=False)

        return struct

    def _union(self, schema: Schema, members: list[Node]) -> Reader:
        enhanced = self.config.enhanced_avro_schema_support
        count = len(schema.fields)
        by_name: dict[str, tuple[int, Reader]] = {}
        by_type: list[tuple[str, int, Reader]] = []
        for member in members:
            field = schema.field(member_field_name(member, enhanced))
            if field is None:
                raise DataError(f"The union struct has no field for Avro member {member!r}")
            read = self.compile(field.schema, member)
            kind = node_type(member)
            if kind in n.NAMED_TYPES:
                by_name[str(member["name"])] = (field.index, read)
            by_type.append((kind, field.index, read))

        def union(datum: Any) -> Any:
            if datum is None:
                return None
            found: tuple[int, Reader] | None = None
            if type(datum) is tuple:
                found = by_name.get(datum[0])
                datum = datum[1]
            else:
                for kind, index, read in by_type:
                    if _fits(kind, datum):
                        found = (index, read)
                        break
            if found is None:
                raise DataError("Did not find matching union field for data")
            values: list[Any] = [None] * count
            values[found[0]] = found[1](datum)
            return Struct.from_values(schema, values, validate=False)

        return union


def json_to_datum(node: Node, value: Any) -> Any:
    """An Avro JSON default as the datum fastavro would have read (a union's default is
    its first member's)."""
    if value is None:
        return None
    kind = node_type(node)
    if kind == "union":
        return json_to_datum(node[0], value)
    if kind in ("bytes", "fixed"):
        if not isinstance(value, str):
            raise DataError(f"Invalid binary default {value!r}")
        return value.encode("latin-1")
    if kind in ("float", "double"):
        return float(value)
    if kind == "array":
        return [json_to_datum(node["items"], e) for e in value]
    if kind == "map":
        return {k: json_to_datum(node["values"], v) for k, v in value.items()}
    if kind == "record":
        if not isinstance(value, dict):
            raise DataError(f"Invalid JSON for record default value: {value!r}")
        return {f["name"]: json_to_datum(f["type"], value.get(f["name"]))
                for f in node["fields"]}
    return value


_ANYTHING_ORDER = ("boolean", "bytes", "double", "float", "int", "long", "string")


def from_anything(datum: Any) -> Any:
    """A schemaless value from Confluent's ``Anything`` record (None when none is set)."""
    if datum is None:
        return None
    if type(datum) is tuple:
        datum = datum[1]
    for key in _ANYTHING_ORDER:
        value = datum.get(key)
        if value is not None:
            return value
    array = datum.get("array")
    if array is not None:
        return [from_anything(e) for e in array]
    entries = datum.get("map")
    if entries is not None:
        return {from_anything(e[n.KEY_FIELD]): from_anything(e[n.VALUE_FIELD])
                for e in entries}
    return None
