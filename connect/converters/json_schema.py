"""Connect schemas as JsonConverter writes them: ``{"type":"struct","fields":[...],...}``.

Kafka's ``JsonConverter.asJsonSchema``/``asConnectSchema``, with Jackson's key order so the
text is byte-identical: ``type``; then ``items`` (array), ``keys`` and ``values`` (map) or
``fields`` (struct: each field's own schema object with ``"field":NAME`` appended last);
then ``optional`` (always), ``name``, ``version``, ``doc``, ``parameters`` and
``default``, each only when set. FLOAT32 is written ``float`` and FLOAT64 ``double``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from connect.api.data import Schema, SchemaBuilder, Type
from connect.api.errors import DataError

__all__ = [
    "JSON_NAME_BY_TYPE",
    "TYPE_BY_JSON_NAME",
    "quote",
    "schema_from_json",
    "schema_to_json",
]

JSON_NAME_BY_TYPE: dict[Type, str] = {
    Type.BOOLEAN: "boolean",
    Type.INT8: "int8",
    Type.INT16: "int16",
    Type.INT32: "int32",
    Type.INT64: "int64",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BYTES: "bytes",
    Type.STRING: "string",
    Type.ARRAY: "array",
    Type.MAP: "map",
    Type.STRUCT: "struct",
}
TYPE_BY_JSON_NAME: dict[str, Type] = {name: type_ for type_, name in JSON_NAME_BY_TYPE.items()}

_encode_basestring: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
# Jackson's escapes: the two mandatory ones, the five short forms, and \u00XX with
# upper-case hex for the other control characters. Everything else, non-ASCII included,
# is written as is (UTF-8 on the wire).
_JACKSON_ESCAPES = {code: f"\\u{code:04X}" for code in range(0x20)}
_JACKSON_ESCAPES.update(
    {
        ord('"'): '\\"',
        ord("\\"): "\\\\",
        ord("\b"): "\\b",
        ord("\t"): "\\t",
        ord("\n"): "\\n",
        ord("\f"): "\\f",
        ord("\r"): "\\r",
    }
)


def quote(text: str) -> str:
    """``text`` as a JSON string literal exactly as Jackson writes it."""
    # The C encoder escapes the same characters as Jackson but with lower-case hex; its
    # output can hold "\u00" only then, or where the text itself had a backslash before
    # "u00" -- either way the slower table gives the right answer.
    out = _encode_basestring(text)
    if "\\u00" in out:
        return '"' + text.translate(_JACKSON_ESCAPES) + '"'
    return out


#: Serializes a (non-null) Connect value for a schema as JSON text: how defaults are written.
ValueToJson = Callable[[Schema, Any], str]
#: Converts a parsed JSON value for a schema to a Connect value: how defaults are read.
JsonToValue = Callable[[Schema, Any], Any]


def schema_to_json(schema: Schema, value_to_json: ValueToJson) -> str:
    """The JSON text of ``schema``; ``value_to_json`` writes its default value."""
    type_ = schema.type
    parts = ['"type":"' + JSON_NAME_BY_TYPE[type_] + '"']
    if type_ is Type.ARRAY:
        parts.append('"items":' + schema_to_json(schema.value_schema, value_to_json))
    elif type_ is Type.MAP:
        parts.append('"keys":' + schema_to_json(schema.key_schema, value_to_json))
        parts.append('"values":' + schema_to_json(schema.value_schema, value_to_json))
    elif type_ is Type.STRUCT:
        fields = [
            schema_to_json(f.schema, value_to_json)[:-1] + ',"field":' + quote(f.name) + "}"
            for f in schema.fields
        ]
        parts.append('"fields":[' + ",".join(fields) + "]")
    parts.append('"optional":' + ("true" if schema.optional else "false"))
    if schema.name is not None:
        parts.append('"name":' + quote(schema.name))
    if schema.version is not None:
        parts.append('"version":' + str(schema.version))
    if schema.doc is not None:
        parts.append('"doc":' + quote(schema.doc))
    if schema.parameters is not None:
        entries = [quote(k) + ":" + quote(v) for k, v in schema.parameters.items()]
        parts.append('"parameters":{' + ",".join(entries) + "}")
    if schema.default_value is not None:
        parts.append('"default":' + value_to_json(schema, schema.default_value))
    return "{" + ",".join(parts) + "}"


def schema_from_json(node: Any, json_to_value: JsonToValue) -> Schema | None:
    """The Connect schema a parsed JSON schema describes (None for JSON null: schemaless);
    ``json_to_value`` converts its ``default``. Raises ``DataError`` with Kafka's messages
    on a malformed schema."""
    if node is None:
        return None
    type_name = node.get("type") if isinstance(node, dict) else None
    if not isinstance(type_name, str):
        raise DataError("Schema must contain 'type' field")
    type_ = TYPE_BY_JSON_NAME.get(type_name)
    if type_ is None:
        raise DataError(f"Unknown schema type: {type_name}")
    builder = _builder(type_, node, json_to_value)
    if node.get("optional") is True:
        builder.optional()
    name = node.get("name")
    if isinstance(name, str):
        builder.name(name)
    version = node.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        builder.version(version)
    doc = node.get("doc")
    if isinstance(doc, str):
        builder.doc(doc)
    parameters = node.get("parameters")
    if isinstance(parameters, dict):
        for key, value in parameters.items():
            if not isinstance(value, str):
                raise DataError("Schema parameters must have string values.")
            builder.parameter(key, value)
    if "default" in node:
        # A struct default is a Struct of the schema without its default, so the value is
        # read against the schema built so far.
        default = json_to_value(builder.build(), node["default"])
        if default is not None:
            builder.default_value(default)
    return builder.build()


def _builder(type_: Type, node: dict[str, Any], json_to_value: JsonToValue) -> SchemaBuilder:
    if type_ is Type.ARRAY:
        items = node.get("items")
        if items is None:
            raise DataError("Array schema did not specify the element type")
        return SchemaBuilder.array(_required_schema(items, json_to_value, "element"))
    if type_ is Type.MAP:
        keys, values = node.get("keys"), node.get("values")
        if keys is None:
            raise DataError("Map schema did not specify the key type")
        if values is None:
            raise DataError("Map schema did not specify the value type")
        return SchemaBuilder.map(
            _required_schema(keys, json_to_value, "key"),
            _required_schema(values, json_to_value, "value"),
        )
    if type_ is Type.STRUCT:
        builder = SchemaBuilder.struct()
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise DataError('Struct schema\'s "fields" argument is not an array.')
        for field in fields:
            field_name = field.get("field") if isinstance(field, dict) else None
            if not isinstance(field_name, str):
                raise DataError("Struct schema's field name not specified properly")
            builder.field(field_name, _required_schema(field, json_to_value, "field"))
        return builder
    return SchemaBuilder(type_)


def _required_schema(node: Any, json_to_value: JsonToValue, what: str) -> Schema:
    schema = schema_from_json(node, json_to_value)
    if schema is None:
        raise DataError(f"The {what} schema must be a JSON object, not null")
    return schema
