"""JSON Schema and JSON to Connect schemas and values, as Confluent's ``JsonSchemaData``.

For schemas from any producer: ``integer`` is INT64 and ``number`` FLOAT64 unless
``connect.type`` names the Connect type; ``string`` is STRING (BYTES with
``"connect.type": "bytes"``); ``enum`` a STRING with ``io.confluent.connect.json.Enum``
parameters; an ``object`` a struct whose fields follow ``connect.index`` (else the
declaration order), or a map with ``"connect.type": "map"``; ``oneOf``/``anyOf`` of null
and one schema an optional schema, other ``oneOf``/``anyOf`` an
``io.confluent.connect.json.OneOf`` struct; ``allOf`` merges object properties; a list
of types is an ``anyOf``; ``$ref`` is followed (also into referenced subjects).
``title`` is the name, ``description`` the doc. Properties missing from ``required`` are
optional only with ``use.optional.for.nonrequired``. A recursive schema, an empty or
boolean schema and a bare ``null`` have no Connect form and are refused.
"""

from __future__ import annotations

import base64
import binascii
import decimal
from typing import Any

from connect.api.data import Decimal, Schema, SchemaBuilder, Struct, Type
from connect.api.errors import DataError, SchemaBuilderError
from schema_registry.serde.connect_schema import temporal_type
from schema_registry.serde.json_from_connect import (
    CONNECT_INDEX_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    JSON_TYPE_ENUM,
    JSON_TYPE_ONE_OF,
    KEY_FIELD,
    NULL_MARKER,
    VALUE_FIELD,
    JsonSchemaDataConfig,
    is_one_of,
)

__all__ = ["ToConnect", "to_connect_data"]

_BY_CONNECT_TYPE = {
    "int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16, "int32": SchemaBuilder.int32,
    "int64": SchemaBuilder.int64, "float32": SchemaBuilder.float32,
    "float64": SchemaBuilder.float64, "bytes": SchemaBuilder.bytes,
}


class ToConnect:
    """One conversion of a JSON schema; ``resolver`` is a ``referencing`` resolver for
    ``$ref`` (``JsonSchema.registry.resolver(base_uri)``), or None."""

    def __init__(self, config: JsonSchemaDataConfig, resolver: Any = None) -> None:
        self.config = config
        self._resolver = resolver
        self._in_progress: set[int] = set()

    def convert(self, node: Any, *, version: int | None = None,
                force_optional: bool = False) -> Schema:
        return self._convert(node, self._resolver, version, force_optional)

    def _convert(self, node: Any, resolver: Any, version: int | None,
                 force_optional: bool) -> Schema:
        if not isinstance(node, dict) or not node:
            raise DataError(f"Unsupported JSON schema {node!r}: an empty or boolean schema has "
                            "no Connect schema")
        if "$ref" in node:
            target, resolver = self._lookup(node["$ref"], resolver)
            return self._convert(target, resolver, version, force_optional)
        if id(node) in self._in_progress:
            raise DataError("The JSON schema is recursive; recursive schemas have no "
                            "Connect schema")
        self._in_progress.add(id(node))
        try:
            return self._build(node, resolver, version, force_optional)
        finally:
            self._in_progress.discard(id(node))

    def _lookup(self, ref: str, resolver: Any) -> tuple[Any, Any]:
        if resolver is None:
            raise DataError(f"Cannot resolve $ref {ref!r} without the schema's registry")
        try:
            resolved = resolver.lookup(ref)
        except Exception as exc:  # referencing raises several Unresolvable kinds
            raise DataError(f"Cannot resolve $ref {ref!r}: {exc}") from exc
        return resolved.contents, resolved.resolver

    def _build(self, node: dict[str, Any], resolver: Any, version: int | None,
               force_optional: bool) -> Schema:
        kind = node.get("type")
        combined = node.get("oneOf", node.get("anyOf"))
        if isinstance(kind, list):
            variants = [{**node, "type": t} for t in kind]
            return self._build({"anyOf": variants, **_annotations(node)}, resolver, version,
                               force_optional)
        if "allOf" in node or (combined is not None and (kind is not None
                                                        or "properties" in node)):
            return self._all_of(node, resolver, version, force_optional)
        if combined is not None:
            members = [self._deref(m, resolver) for m in combined]
            non_null = [m for m in members if m[0].get("type") != "null"]
            if len(members) == 2 and len(non_null) == 1:
                target, target_resolver = non_null[0]
                return self._convert(target, target_resolver, version, True)
            builder = SchemaBuilder.struct().name(JSON_TYPE_ONE_OF)
            index = 0
            for member, member_resolver in members:
                if member.get("type") == "null":
                    builder.optional()
                    continue
                builder.field(f"{JSON_TYPE_ONE_OF}.field.{index}",
                              self._convert(member, member_resolver, None, True))
                index += 1
        else:
            builder = self._typed(node, kind, resolver)
        return self._finish(builder, node, version, force_optional)

    def _deref(self, node: Any, resolver: Any) -> tuple[dict[str, Any], Any]:
        while isinstance(node, dict) and "$ref" in node:
            node, resolver = self._lookup(node["$ref"], resolver)
        if not isinstance(node, dict):
            raise DataError(f"Unsupported JSON schema {node!r} in oneOf/anyOf")
        return node, resolver

    def _typed(self, node: dict[str, Any], kind: Any, resolver: Any) -> SchemaBuilder:
        connect_type = node.get(CONNECT_TYPE_PROP)
        if "enum" in node and kind in (None, "string"):
            builder = SchemaBuilder.string().parameter(JSON_TYPE_ENUM, "")
            for symbol in node["enum"]:
                text = NULL_MARKER if symbol is None else str(symbol)
                builder.parameter(f"{JSON_TYPE_ENUM}.{text}", text)
            return builder
        if kind is None:
            kind = "object" if "properties" in node or "additionalProperties" in node else \
                "array" if "items" in node else None
        if kind == "boolean":
            return SchemaBuilder.boolean()
        if kind in ("integer", "number"):
            if connect_type is None:
                return SchemaBuilder.int64() if kind == "integer" else SchemaBuilder.float64()
            if connect_type not in _BY_CONNECT_TYPE:
                raise DataError(f"Unsupported connect.type {connect_type!r}")
            return _BY_CONNECT_TYPE[connect_type]()
        if kind == "string":
            return SchemaBuilder.bytes() if connect_type == "bytes" else SchemaBuilder.string()
        if kind == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                raise DataError("Array schema did not specify the items type")
            items, items_resolver = self._deref(items, resolver)
            if connect_type == "map" and items.get("type") == "object":
                props = items.get("properties", {})
                return SchemaBuilder.map(self._convert(props[KEY_FIELD], items_resolver,
                                                       None, False),
                                         self._convert(props[VALUE_FIELD], items_resolver,
                                                       None, False))
            return SchemaBuilder.array(self._convert(items, items_resolver, None, False))
        if kind == "object":
            if connect_type == "map":
                values = node.get("additionalProperties")
                if not isinstance(values, dict):
                    raise DataError("A map schema needs an additionalProperties schema")
                return SchemaBuilder.map(Schema.STRING_SCHEMA,
                                         self._convert(values, resolver, None, False))
            return self._struct(node.get("properties", {}), set(node.get("required", ())),
                                resolver)
        raise DataError(f"Unsupported JSON schema type {kind!r} in {node!r}")

    def _struct(self, properties: dict[str, Any], required: set[str],
                resolver: Any) -> SchemaBuilder:
        ordered: dict[int, tuple[str, Any]] = {}
        for name, sub in properties.items():
            index = sub.get(CONNECT_INDEX_PROP) if isinstance(sub, dict) else None
            ordered[index if isinstance(index, int) else len(ordered)] = (name, sub)
        builder = SchemaBuilder.struct()
        for _, (name, sub) in sorted(ordered.items()):
            optional = self.config.use_optional_for_non_required and name not in required
            builder.field(name, self._convert(sub, resolver, None, optional))
        return builder

    def _all_of(self, node: dict[str, Any], resolver: Any, version: int | None,
                force_optional: bool) -> Schema:
        parts = [({k: v for k, v in node.items() if k not in ("allOf", "oneOf", "anyOf")},
                  resolver)]
        parts += [self._deref(m, resolver) for m in node.get("allOf", ())]
        combined = node.get("oneOf", node.get("anyOf"))
        properties: dict[str, Any] = {}
        required: set[str] = set()
        for part, _ in parts:
            properties.update(part.get("properties", {}))
            required.update(part.get("required", ()))
        if properties:
            builder = self._struct(properties, required, resolver)
            return self._finish(builder, node, version, force_optional)
        if combined is not None:
            return self._convert({"oneOf": combined}, resolver, version, force_optional)
        for part, part_resolver in parts:
            inner = [p for p, _ in parts if p is not part]
            if "enum" in part or any("enum" in p for p in inner):
                merged = {k: v for p, _ in parts for k, v in p.items()}
                if merged.get("type") in (None, "string"):
                    return self._convert(merged, part_resolver, version, force_optional)
            if "type" in part:
                return self._convert(part, part_resolver, version, force_optional)
        raise DataError(f"Unsupported allOf schema {node!r}")

    def _finish(self, builder: SchemaBuilder, node: dict[str, Any], version: int | None,
                force_optional: bool) -> Schema:
        title = node.get("title")
        if isinstance(title, str) and builder.build().name is None:
            builder.name(title)
        connect_version = node.get(CONNECT_VERSION_PROP)
        if isinstance(connect_version, int) and not isinstance(connect_version, bool):
            builder.version(connect_version)
        elif version is not None:
            builder.version(version)
        if isinstance(node.get("description"), str):
            builder.doc(node["description"])
        parameters = node.get(CONNECT_PARAMETERS_PROP)
        if isinstance(parameters, dict):
            builder.parameters({str(k): str(v) for k, v in parameters.items()})
        if force_optional:
            builder.optional()
        schema = builder.build()
        if "default" not in node or node["default"] is None:
            return schema
        try:
            default = to_connect_data(schema, node["default"], self.config)
            return SchemaBuilder.from_schema(schema).default_value(default).build()
        except (DataError, SchemaBuilderError) as exc:
            raise DataError(f"Invalid default {node['default']!r}: {exc}") from exc


def _annotations(node: dict[str, Any]) -> dict[str, Any]:
    keys = ("title", "description", "default", CONNECT_VERSION_PROP, CONNECT_PARAMETERS_PROP)
    return {k: node[k] for k in keys if k in node}


def to_connect_data(schema: Schema | None, value: Any, config: JsonSchemaDataConfig) -> Any:
    """The Connect value of parsed JSON (numbers with a fraction as ``decimal.Decimal``,
    as ``json.loads(..., parse_float=decimal.Decimal)`` gives them)."""
    if schema is None:
        return _schemaless(value)
    if value is None:
        if schema.default_value is not None:
            return schema.default_value
        return None
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
            return decimal.Decimal(value) if not isinstance(value, float) else \
                decimal.Decimal(repr(value))
        return Decimal.to_logical(schema, _base64(value))
    temporal = temporal_type(schema)
    if temporal is not None:
        return temporal.to_logical(schema, _integer(value, name))
    kind = schema.type
    if kind is Type.BOOLEAN:
        if not isinstance(value, bool):
            raise DataError(f"Expected a JSON boolean, got {value!r}")
        return value
    if kind in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
            raise DataError(f"Expected a JSON integer for {kind.value}, got {value!r}")
        return int(value)
    if kind in (Type.FLOAT32, Type.FLOAT64):
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
            raise DataError(f"Expected a JSON number for {kind.value}, got {value!r}")
        return float(value)
    if kind is Type.STRING:
        if not isinstance(value, str):
            raise DataError(f"Expected a JSON string, got {value!r}")
        return value
    if kind is Type.BYTES:
        return _base64(value)
    if kind is Type.ARRAY:
        if not isinstance(value, list):
            raise DataError(f"Expected a JSON array, got {type(value).__name__}")
        return [to_connect_data(schema.value_schema, e, config) for e in value]
    if kind is Type.MAP:
        return _map(schema, value, config)
    return _struct(schema, value, config)


def _map(schema: Schema, value: Any, config: JsonSchemaDataConfig) -> dict[Any, Any]:
    key_schema, value_schema = schema.key_schema, schema.value_schema
    if key_schema.type is Type.STRING and not key_schema.optional:
        if not isinstance(value, dict):
            raise DataError("Maps with string fields should be encoded as JSON objects, but "
                            f"found {type(value).__name__}")
        return {k: to_connect_data(value_schema, v, config) for k, v in value.items()}
    if not isinstance(value, list):
        raise DataError("Maps with non-string fields should be encoded as JSON array of "
                        f"objects, but found {type(value).__name__}")
    out = {}
    for entry in value:
        if not isinstance(entry, dict) or len(entry) != 2:
            raise DataError(f"Found invalid map entry {entry!r}")
        out[to_connect_data(key_schema, entry.get(KEY_FIELD), config)] = \
            to_connect_data(value_schema, entry.get(VALUE_FIELD), config)
    return out


def _struct(schema: Schema, value: Any, config: JsonSchemaDataConfig) -> Struct:
    if is_one_of(schema):
        best, best_count = None, -1
        for field in schema.fields:
            if _simple_match(field.schema, value):
                best = field
                break
            count = _matching_properties(field.schema, value)
            if count > best_count:
                best, best_count = field, count
        if best is None:
            raise DataError("Did not find matching oneof field for data")
        values: list[Any] = [None] * len(schema.fields)
        values[best.index] = to_connect_data(best.schema, value, config)
        return Struct.from_values(schema, values, validate=False)
    if not isinstance(value, dict):
        raise DataError(f"Structs should be encoded as JSON objects, but found "
                        f"{type(value).__name__}")
    return Struct.from_values(
        schema, [to_connect_data(f.schema, value.get(f.name), config) for f in schema.fields],
        validate=False)


def _simple_match(schema: Schema, value: Any) -> bool:
    kind = schema.type
    if kind in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in (Type.FLOAT32, Type.FLOAT64):
        return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)
    if kind is Type.BOOLEAN:
        return isinstance(value, bool)
    if kind is Type.STRING:
        return isinstance(value, str)
    if kind is Type.BYTES:
        return isinstance(value, decimal.Decimal)
    if kind is Type.ARRAY:
        return isinstance(value, list)
    if kind is Type.MAP:
        return isinstance(value, dict | list)
    return False


def _matching_properties(schema: Schema, value: Any) -> int:
    if schema.type is not Type.STRUCT or not isinstance(value, dict):
        return -1
    return len({f.name for f in schema.fields} & value.keys())


def _base64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise DataError(f"Expected base64 text for bytes, got {value!r}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"Invalid base64 bytes {value!r}: {exc}") from exc


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(f"Invalid type for {name}, underlying representation should be an "
                        f"integer but was {value!r}")
    return value


def _schemaless(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list):
        return [_schemaless(e) for e in value]
    if isinstance(value, dict):
        return {k: _schemaless(v) for k, v in value.items()}
    return value
