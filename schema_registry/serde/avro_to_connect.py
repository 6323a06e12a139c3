"""Avro schemas to Connect schemas, as Confluent's ``AvroData.toConnectSchema`` maps them.

The inverse of ``avro_from_connect``, for schemas written by any producer: ``int`` is
INT32 unless ``connect.type`` says int8/int16 or its logical type is date/time-millis;
``long`` with timestamp-millis is Timestamp; decimal ``bytes``/``fixed`` are Decimal
(``connect.decimal.precision`` kept when not 64); ``fixed`` also keeps
``connect.fixed.size``; records are structs named by their full name; enums are strings
carrying Confluent's enum parameters; ``["null", T]`` is an optional T; other unions are
``io.confluent.connect.avro.Union`` structs with a field per member (named after the
member's type, or its name for named types); an array of ``MapEntry`` records is a map.
``connect.name``, ``connect.doc``, ``connect.version``, ``connect.parameters`` and
``connect.default`` are read back; docs and field defaults become Confluent's
``io.confluent.connect.avro.*`` parameters. A recursive Avro type has no Connect form and
is refused.

``resolve`` first turns schema text (plus referenced schemas) into nodes with full names,
a reference to a named type replaced by the type's node itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Time, Timestamp
from connect.api.errors import DataError, SchemaBuilderError
from schema_registry.serde import avro_names as n
from schema_registry.serde.avro_from_connect import Node, node_type, split_name

__all__ = ["ToConnect", "is_map_entry", "member_field_name", "resolve"]

log = logging.getLogger(__name__)

_NO_DEFAULT = object()


def _qualify(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def resolve(value: Any, names: dict[str, Node], namespace: str | None = None) -> Node:
    """The node of parsed Avro JSON ``value``; named types are added to ``names`` (full
    name to node), so referenced schemas are resolved first and share ``names``."""
    if isinstance(value, str):
        if value in n.PRIMITIVES:
            return value
        for candidate in (_qualify(value, namespace), value):
            if candidate in names:
                return names[candidate]
        raise DataError(f"Unknown Avro type name {value!r}")
    if isinstance(value, list):
        return [resolve(member, names, namespace) for member in value]
    if not isinstance(value, dict):
        raise DataError(f"Invalid Avro schema element {value!r}")
    kind = value.get("type")
    if isinstance(kind, dict | list):
        return resolve(kind, names, namespace)
    if not isinstance(kind, str):
        raise DataError(f"Avro schema element without a type: {value!r}")
    if kind in n.NAMED_TYPES:
        own = value.get("namespace")
        full = _qualify(str(value["name"]), own if own is not None else namespace)
        node = {k: v for k, v in value.items() if k != "namespace"}
        node["name"] = full
        names[full] = node
        if kind in ("record", "error"):
            inner = split_name(full)[0]
            node["type"] = "record"
            node["fields"] = [{**f, "type": resolve(f["type"], names, inner)}
                              for f in value.get("fields", ())]
        return node
    if kind == "array":
        return {**value, "items": resolve(value["items"], names, namespace)}
    if kind == "map":
        return {**value, "values": resolve(value["values"], names, namespace)}
    if kind in n.PRIMITIVES:
        return value if len(value) > 1 else kind
    return resolve(kind, names, namespace)


def _props(node: Node) -> Mapping[str, Any]:
    return node if isinstance(node, dict) else {}


def is_map_entry(node: Node) -> bool:
    """Whether ``node`` is the record Confluent encodes a non-string-keyed map entry as."""
    if node_type(node) != "record":
        return False
    return (node["name"] == f"{n.NAMESPACE}.{n.MAP_ENTRY_TYPE_NAME}"
            or node.get(n.CONNECT_INTERNAL_TYPE_NAME) == n.MAP_ENTRY_TYPE_NAME)


def member_field_name(node: Node, enhanced: bool) -> str:
    """The Connect union field name of a union member: its type's name, or for a named
    type its simple name (its full name with ``enhanced.avro.schema.support``)."""
    kind = node_type(node)
    if kind in n.NAMED_TYPES:
        return str(node["name"]) if enhanced else split_name(str(node["name"]))[1]
    return kind


class ToConnect:
    """One conversion of an Avro schema to a Connect schema (``ToConnectContext``)."""

    def __init__(self, config: n.AvroDataConfig, default_reader: Any) -> None:
        """``default_reader(schema, node, json)`` converts a JSON default to a Connect
        value (``avro_reader.default_from_json``)."""
        self.config = config
        self._default_reader = default_reader
        self._in_progress: set[int] = set()

    def convert(self, node: Node, *, force_optional: bool = False,
                field_default: Any = _NO_DEFAULT, version: int | None = None) -> Schema:
        kind = node_type(node)
        if kind == "union":
            flattened = self._flatten(node)
            if flattened is not None:
                return flattened
        props = _props(node)
        meta = self.config.connect_meta_data
        connect_type = props.get(n.CONNECT_TYPE_PROP)
        logical = props.get(n.LOGICAL_TYPE_PROP)
        logical = logical.lower() if isinstance(logical, str) else None
        if kind == "record":
            if id(node) in self._in_progress:
                raise DataError(f"The Avro record {node['name']} is recursive; recursive "
                                "types have no Connect schema")
            self._in_progress.add(id(node))
            try:
                builder = self._record(node)
            finally:
                self._in_progress.discard(id(node))
        elif kind == "union":
            builder = self._union(node)
        else:
            builder = self._simple(node, kind, connect_type, logical)
        if meta and isinstance(props.get(n.CONNECT_DOC_PROP), str):
            builder.doc(props[n.CONNECT_DOC_PROP])
        self._version(builder, props.get(n.CONNECT_VERSION_PROP), version)
        parameters = props.get(n.CONNECT_PARAMETERS_PROP)
        if meta and parameters is not None:
            if not isinstance(parameters, dict) or not all(
                    isinstance(v, str) for v in parameters.values()):
                raise DataError(f"Expected a JSON object of strings for schema parameters, "
                                f"found {parameters!r}")
            builder.parameters(parameters)
        for key, value in props.items():
            if key.startswith(n.AVRO_PROP):
                builder.parameter(key, value if isinstance(value, str) else json.dumps(value))
        connect_default = props.get(n.CONNECT_DEFAULT_VALUE_PROP, _NO_DEFAULT)
        default = field_default
        if default is _NO_DEFAULT:
            default = connect_default
        elif meta and connect_default is _NO_DEFAULT:
            builder.parameter(n.AVRO_FIELD_DEFAULT_FLAG_PROP, "true")
        self._name(builder, node, kind, props)
        if force_optional:
            builder.optional()
        schema = builder.build()
        if default is _NO_DEFAULT or default is None:
            return schema
        try:
            value = self._default_reader(schema, node, default)
            return SchemaBuilder.from_schema(schema).default_value(value).build()
        except (DataError, SchemaBuilderError, TypeError, ValueError, KeyError) as exc:
            log.warning("Ignoring invalid default %r for Avro schema %s: %s", default,
                        node.get("name", kind) if isinstance(node, dict) else kind, exc)
            return schema

    def _flatten(self, node: list[Node]) -> Schema | None:
        # A field default does not reach the member: Confluent drops it here too.
        if len(node) == 1 and self.config.flatten_singleton_union:
            return self.convert(node[0])
        if len(node) == 2 and "null" in node:
            member = node[0] if node[1] == "null" else node[1]
            return self.convert(member, force_optional=True)
        return None

    def _simple(self, node: Node, kind: str, connect_type: Any,
                logical: str | None) -> SchemaBuilder:
        if kind == "boolean":
            return SchemaBuilder.boolean()
        if kind in ("bytes", "fixed"):
            if logical == n.LOGICAL_DECIMAL:
                scale = node.get(n.DECIMAL_SCALE_PROP)
                builder = Decimal.builder(scale if isinstance(scale, int) else 0)
                precision = node.get(n.DECIMAL_PRECISION_PROP)
                if precision is not None:
                    if not isinstance(precision, int) or isinstance(precision, bool):
                        raise DataError("precision property must be a JSON Integer "
                                        "(https://avro.apache.org/docs/1.9.1/spec.html#Decimal)")
                    if precision != n.CONNECT_DECIMAL_PRECISION_DEFAULT:
                        builder.parameter(n.CONNECT_DECIMAL_PRECISION_PROP, str(precision))
            else:
                builder = SchemaBuilder.bytes()
            if kind == "fixed":
                builder.parameter(n.CONNECT_FIXED_SIZE_PROP, str(node["size"]))
            return builder
        if kind == "double":
            return SchemaBuilder.float64()
        if kind == "float":
            return SchemaBuilder.float32()
        if kind == "int":
            if logical == n.LOGICAL_DATE:
                return Date.builder()
            if logical == n.LOGICAL_TIME_MILLIS:
                return Time.builder()
            if connect_type is None or logical is not None:
                return SchemaBuilder.int32()
            if connect_type == n.CONNECT_TYPE_INT8:
                return SchemaBuilder.int8()
            if connect_type == n.CONNECT_TYPE_INT16:
                return SchemaBuilder.int16()
            raise DataError(f"Unknown connect.type {connect_type!r} on an Avro int")
        if kind == "long":
            if logical == n.LOGICAL_TIMESTAMP_MILLIS:
                return Timestamp.builder()
            return SchemaBuilder.int64()
        if kind == "string":
            return SchemaBuilder.string()
        if kind == "array":
            items = node["items"]
            if is_map_entry(items):
                fields = {f["name"]: f["type"] for f in items["fields"]}
                if len(items["fields"]) != 2 or set(fields) != {n.KEY_FIELD, n.VALUE_FIELD}:
                    raise DataError("Found map encoded as array of key-value pairs, but "
                                    "array elements do not match the expected format.")
                return SchemaBuilder.map(self._fresh(fields[n.KEY_FIELD]),
                                         self._fresh(fields[n.VALUE_FIELD]))
            return SchemaBuilder.array(self.convert(items))
        if kind == "map":
            return SchemaBuilder.map(Schema.STRING_SCHEMA, self.convert(node["values"]))
        if kind == "enum":
            return self._enum(node)
        if kind == "null":
            raise DataError("Standalone null schemas are not supported by this converter")
        raise DataError(f"Couldn't translate unsupported schema type {kind}.")

    def _fresh(self, node: Node) -> Schema:
        return ToConnect(self.config, self._default_reader).convert(node)

    def _record(self, node: Node) -> SchemaBuilder:
        builder = SchemaBuilder.struct()
        meta = self.config.connect_meta_data
        if meta and isinstance(node.get("doc"), str):
            builder.parameter(n.AVRO_RECORD_DOC_PROP, node["doc"])
        for field in node["fields"]:
            doc = field.get("doc")
            if meta and isinstance(doc, str):
                builder.parameter(n.AVRO_FIELD_DOC_PREFIX_PROP + field["name"], doc)
            default = field.get("default", _NO_DEFAULT)
            builder.field(field["name"], self.convert(field["type"], field_default=default))
        return builder

    def _enum(self, node: Node) -> SchemaBuilder:
        builder = SchemaBuilder.string()
        simple = split_name(node["name"])[1]
        if self.config.connect_meta_data:
            if isinstance(node.get("doc"), str):
                builder.parameter(n.AVRO_ENUM_DOC_PREFIX_PROP + simple, node["doc"])
            if isinstance(node.get("default"), str):
                builder.parameter(n.AVRO_ENUM_DEFAULT_PREFIX_PROP + simple, node["default"])
        builder.parameter(n.AVRO_TYPE_ENUM, node["name"])
        for symbol in node["symbols"]:
            builder.parameter(f"{n.AVRO_TYPE_ENUM}.{symbol}", symbol)
        return builder

    def _union(self, node: list[Node]) -> SchemaBuilder:
        builder = SchemaBuilder.struct().name(n.AVRO_TYPE_UNION)
        seen: set[str] = set()
        for member in node:
            if member == "null":
                builder.optional()
                continue
            name = member_field_name(member, self.config.enhanced_avro_schema_support)
            if name in seen:
                raise DataError("Multiple union schemas map to the Connect union field name "
                                f"{name!r}")
            seen.add(name)
            builder.field(name, self.convert(member, force_optional=True))
        return builder

    @staticmethod
    def _version(builder: SchemaBuilder, connect_version: Any, version: int | None) -> None:
        if connect_version is not None:
            if not isinstance(connect_version, int) or isinstance(connect_version, bool):
                raise DataError(f"Invalid Connect version found: {connect_version!r}")
            current = builder.build().version
            if current is not None and current != connect_version:
                raise DataError(f"Mismatched versions: version already added to SchemaBuilder "
                                f"({current}) differs from version in source schema "
                                f"({connect_version})")
            builder.version(connect_version)
        elif version is not None and version >= 0 and builder.build().version is None:
            builder.version(version)

    @staticmethod
    def _name(builder: SchemaBuilder, node: Node, kind: str, props: Mapping[str, Any]) -> None:
        name = props.get(n.CONNECT_NAME_PROP)
        if name is not None and not isinstance(name, str):
            raise DataError(f"Invalid schema name: {name!r}")
        if name is None and kind in n.NAMED_TYPES:
            name = node["name"]
        if name is None or name.startswith(n.DEFAULT_SCHEMA_FULL_NAME):
            return
        current = builder.build().name
        if current is not None and current != name:
            raise DataError(f"Mismatched names: name already added to SchemaBuilder ({current}) "
                            f"differs from name in source schema ({name})")
        builder.name(name)
