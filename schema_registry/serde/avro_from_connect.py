"""Connect schemas to Avro schemas, as Confluent's ``AvroData.fromConnectSchema`` maps them.

=====================  ==========================================================
Connect                Avro
=====================  ==========================================================
INT8, INT16            ``int`` with ``"connect.type": "int8"`` / ``"int16"``
INT32, INT64           ``int``, ``long``
FLOAT32, FLOAT64       ``float``, ``double``
BOOLEAN, STRING        ``boolean``, ``string`` (an enum with
                       ``enhanced.avro.schema.support`` and Confluent's enum parameters)
BYTES                  ``bytes``; ``fixed`` when the schema is named and has the
                       ``connect.fixed.size`` parameter
ARRAY                  ``array``
MAP                    ``map`` for required string keys, else an array of ``MapEntry``
                       records with ``key`` and ``value`` fields
STRUCT                 ``record`` named after the schema (``ConnectDefault``, then
                       ``ConnectDefault2`` ... in ``io.confluent.connect.avro`` when
                       unnamed); a struct named ``io.confluent.connect.avro.Union`` is a
                       union of its fields' schemas
optional               ``["null", T]`` with field default null; ``[T, "null"]`` when the
                       schema has a default
Decimal                ``bytes``, ``logicalType`` decimal, ``scale``, ``precision``
                       (``connect.decimal.precision`` or 64)
Date, Time, Timestamp  ``int`` date, ``int`` time-millis, ``long`` timestamp-millis
=====================  ==========================================================

With ``connect.meta.data`` every non-union schema also carries ``connect.doc``,
``connect.version``, ``connect.parameters``, ``connect.default`` and ``connect.name``.
The result is a node tree (dicts, lists and strings as in Avro's JSON, named types with
their full names) that ``avro_render.render`` turns into schema text.
"""

from __future__ import annotations

import logging
from typing import Any

from connect.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connect.api.errors import DataError
from schema_registry.serde import avro_names as n
from schema_registry.serde.connect_schema import non_optional, temporal_type

__all__ = [
    "FromConnect",
    "branch_name",
    "default_is_valid",
    "is_union",
    "node_type",
    "split_name",
]

log = logging.getLogger(__name__)

Node = Any  # str | list[Node] | dict[str, Any]: Avro's JSON, named types by full name

_PRIMITIVE_OF = {
    Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "long",
    Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean",
    Type.STRING: "string", Type.BYTES: "bytes",
}
_LOGICAL_OF = {
    Date.LOGICAL_NAME: n.LOGICAL_DATE,
    Time.LOGICAL_NAME: n.LOGICAL_TIME_MILLIS,
    Timestamp.LOGICAL_NAME: n.LOGICAL_TIMESTAMP_MILLIS,
}


def is_union(schema: Schema) -> bool:
    """Whether ``schema`` is a struct standing for an Avro union."""
    return schema.type is Type.STRUCT and schema.name == n.AVRO_TYPE_UNION


def is_fixed(schema: Schema) -> bool:
    return (schema.type is Type.BYTES and schema.name is not None
            and schema.parameters is not None
            and n.CONNECT_FIXED_SIZE_PROP in schema.parameters)


def is_enum(schema: Schema) -> bool:
    return (schema.type is Type.STRING and schema.parameters is not None
            and n.AVRO_TYPE_ENUM in schema.parameters)


def split_name(full: str) -> tuple[str | None, str]:
    """``(namespace or None, simple name)`` of a dotted full name."""
    namespace, dot, simple = full.rpartition(".")
    return (namespace if dot and namespace else None), simple


def node_type(node: Node) -> str:
    """The Avro type of a node: its name for a primitive or a named reference, "union"
    for a list, else its ``type``."""
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    return str(node["type"])


def branch_name(node: Node) -> str:
    """The name fastavro's tuple notation uses for a union member: a named type's full
    name, else the type's name."""
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        raise DataError("A union cannot directly contain another union")
    kind = node["type"]
    return str(node["name"]) if kind in n.NAMED_TYPES else str(kind)


class FromConnect:
    """One conversion of a Connect schema (Confluent's ``FromConnectContext``): named
    types already converted are reused, unnamed records numbered in order."""

    def __init__(self, config: n.AvroDataConfig) -> None:
        self.config = config
        self._converted: dict[Schema, Node] = {}
        self._default_names = 0

    # -- names ---------------------------------------------------------------------------

    def _scrub_full(self, name: str) -> str:
        if not self.config.scrub_invalid_names:
            return name
        return ".".join(n.scrub_name(part) for part in name.split("."))

    def _name_or_default(self, name: str | None) -> str:
        if name is not None:
            return self._scrub_full(name)
        self._default_names += 1
        suffix = str(self._default_names) if self._default_names > 1 else ""
        return f"{n.DEFAULT_SCHEMA_FULL_NAME}{suffix}"

    def _field_name(self, name: str) -> str:
        return n.scrub_name(name) if self.config.scrub_invalid_names else name

    # -- schemas -------------------------------------------------------------------------

    def convert(self, schema: Schema, *, ignore_optional: bool = False) -> Node:
        """The Avro node of ``schema`` (a union when optional, unless
        ``ignore_optional``)."""
        if not is_union(schema) and not schema.optional:
            cached = self._converted.get(schema)
            if cached is not None:
                return cached
        connect_type = None
        params = schema.parameters or {}
        base: Node
        kind = schema.type
        if kind in (Type.INT8, Type.INT16):
            connect_type = kind.value
            base = {"type": "int"}
        elif kind is Type.STRING and self.config.enhanced_avro_schema_support \
                and n.AVRO_TYPE_ENUM in params:
            base = self._enum(schema, params)
        elif kind is Type.BYTES:
            if is_fixed(schema):
                base = {"type": "fixed", "name": self._name_or_default(schema.name),
                        "size": int(params[n.CONNECT_FIXED_SIZE_PROP])}
            else:
                base = {"type": "bytes"}
            if schema.name == Decimal.LOGICAL_NAME:
                base[n.DECIMAL_SCALE_PROP] = int(params.get(Decimal.SCALE_FIELD, "0"))
                base[n.DECIMAL_PRECISION_PROP] = int(params.get(
                    n.CONNECT_DECIMAL_PRECISION_PROP, n.CONNECT_DECIMAL_PRECISION_DEFAULT))
        elif kind in _PRIMITIVE_OF:
            base = {"type": _PRIMITIVE_OF[kind]}
        elif kind is Type.ARRAY:
            base = {"type": "array", "items": self.convert(schema.value_schema)}
        elif kind is Type.MAP:
            base = self._map(schema)
        elif is_union(schema):
            members: list[Node] = ["null"] if schema.optional else []
            members += [self.convert(non_optional(f.schema), ignore_optional=True)
                        for f in schema.fields]
            base = members
        elif schema.optional:
            base = ["null", self.convert(non_optional(schema))]
        else:
            base = self._record(schema, params)
        final = base
        if not isinstance(base, list):
            self._add_metadata(schema, base, connect_type)
            if not ignore_optional and schema.optional:
                final = [base, "null"] if schema.default_value is not None else ["null", base]
        if not schema.optional:
            self._converted[schema] = final
        return final

    def _enum(self, schema: Schema, params: Any) -> Node:
        prefix = n.AVRO_TYPE_ENUM + "."
        symbols = [key[len(prefix):] for key in params if key.startswith(prefix)]
        simple = split_name(self._name_or_default(schema.name))[1]
        node: dict[str, Any] = {"type": "enum", "name": params[n.AVRO_TYPE_ENUM]}
        doc = params.get(n.AVRO_ENUM_DOC_PREFIX_PROP + simple)
        if doc is not None:
            node["doc"] = doc
        node["symbols"] = symbols
        default = params.get(n.AVRO_ENUM_DEFAULT_PREFIX_PROP + simple)
        if default is not None:
            node["default"] = default
        return node

    def _map(self, schema: Schema) -> Node:
        key_schema = schema.key_schema
        if key_schema.type is Type.STRING and (
                not key_schema.optional or self.config.allow_optional_map_keys):
            return {"type": "map", "values": self.convert(schema.value_schema)}
        entry: dict[str, Any] = {"type": "record"}
        if schema.name is None:
            entry["name"] = f"{n.NAMESPACE}.{n.MAP_ENTRY_TYPE_NAME}"
        else:
            entry["name"] = self._name_or_default(schema.name)
            entry[n.CONNECT_INTERNAL_TYPE_NAME] = n.MAP_ENTRY_TYPE_NAME
        entry["fields"] = [self._field(n.KEY_FIELD, key_schema, None),
                           self._field(n.VALUE_FIELD, schema.value_schema, None)]
        return {"type": "array", "items": entry}

    def _record(self, schema: Schema, params: Any) -> Node:
        node: dict[str, Any] = {"type": "record", "name": self._name_or_default(schema.name)}
        doc = params.get(n.AVRO_RECORD_DOC_PROP)
        if doc is not None:
            node["doc"] = doc
        node["fields"] = [
            self._field(self._field_name(f.name), f.schema,
                        params.get(n.AVRO_FIELD_DOC_PREFIX_PROP + f.name))
            for f in schema.fields
        ]
        return node

    def _field(self, name: str, schema: Schema, doc: str | None) -> dict[str, Any]:
        type_node = self.convert(schema)
        field: dict[str, Any] = {"name": name, "type": type_node}
        if doc is not None:
            field["doc"] = doc
        if schema.default_value is not None:
            default = self.default_to_json(schema, schema.default_value)
            if default_is_valid(type_node, default):
                field["default"] = default
            else:
                log.warning("Ignoring invalid default for field %s", name)
        elif schema.optional:
            field["default"] = None
        return field

    def _add_metadata(self, schema: Schema, base: dict[str, Any],
                      connect_type: str | None) -> None:
        params = schema.parameters
        if self.config.connect_meta_data:
            if schema.doc is not None:
                base[n.CONNECT_DOC_PROP] = schema.doc
            if schema.version is not None:
                base[n.CONNECT_VERSION_PROP] = schema.version
            if params is not None:
                shown = {k: v for k, v in params.items() if k != n.AVRO_FIELD_DEFAULT_FLAG_PROP}
                if shown:
                    base[n.CONNECT_PARAMETERS_PROP] = shown
            if schema.default_value is not None and (
                    params is None or n.AVRO_FIELD_DEFAULT_FLAG_PROP not in params):
                base[n.CONNECT_DEFAULT_VALUE_PROP] = self.default_to_json(
                    schema, schema.default_value)
            if schema.name is not None:
                base[n.CONNECT_NAME_PROP] = schema.name
            if connect_type is not None:
                base[n.CONNECT_TYPE_PROP] = connect_type
        if schema.name == Decimal.LOGICAL_NAME:
            base[n.LOGICAL_TYPE_PROP] = n.LOGICAL_DECIMAL
        elif schema.name in _LOGICAL_OF:
            base[n.LOGICAL_TYPE_PROP] = _LOGICAL_OF[schema.name]
        for key, value in (params or {}).items():
            if key.startswith(n.AVRO_PROP):
                base[key] = value

    # -- default values ------------------------------------------------------------------

    def default_to_json(self, schema: Schema, value: Any) -> Any:
        """A Connect value as Avro's JSON form of a default (bytes as ISO-8859-1 text)."""
        if value is None:
            return None
        temporal = temporal_type(schema)
        if temporal is not None:
            return temporal.from_logical(schema, value)
        if schema.name == Decimal.LOGICAL_NAME:
            value = Decimal.from_logical(schema, value)
        kind = schema.type
        if kind is Type.BYTES:
            return bytes(value).decode("latin-1")
        if kind is Type.ARRAY:
            return [self.default_to_json(schema.value_schema, e) for e in value]
        if kind is Type.MAP:
            key_schema = schema.key_schema
            if key_schema.type is Type.STRING and (
                    not key_schema.optional or self.config.allow_optional_map_keys):
                return {k: self.default_to_json(schema.value_schema, v) for k, v in value.items()}
            return [[self.default_to_json(key_schema, k),
                     self.default_to_json(schema.value_schema, v)] for k, v in value.items()]
        if kind is Type.STRUCT:
            if not isinstance(value, Struct):
                raise DataError(f"Invalid default value for struct {schema.name}: {value!r}")
            out: dict[str, Any] = {}
            for f in schema.fields:
                converted = self.default_to_json(f.schema, value.get(f))
                if is_union(schema):
                    return converted
                out[self._field_name(f.name)] = converted
            return out
        return value


def default_is_valid(node: Node, value: Any) -> bool:
    """Whether ``value`` (JSON) is a valid Avro default for ``node`` (a union's default
    matches its first member)."""
    if isinstance(node, list):
        return bool(node) and default_is_valid(node[0], value)
    kind = node if isinstance(node, str) else node["type"]
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in ("float", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("string", "bytes", "fixed", "enum"):
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list) and all(default_is_valid(node["items"], e) for e in value)
    if kind == "map":
        return isinstance(value, dict) and all(
            default_is_valid(node["values"], v) for v in value.values())
    if kind in ("record", "error"):
        return isinstance(value, dict) and all(
            (f["name"] in value and default_is_valid(f["type"], value[f["name"]]))
            or (f["name"] not in value and "default" in f)
            for f in node["fields"])
    return True  # a named reference: accepted, as its definition was checked
