"""Connect schemas and values to Avro, as Confluent's AvroData maps them, so an Avro
file written from records that ``AvroConverter`` read carries the registered schema's
record names, field types and logical types.

Connect INT8/INT16 are Avro ``int`` with ``connect.type``; optional schemas are
``["null", T]`` with a null default (``[T, "null"]`` when the schema has a default);
structs are records named after the schema (``io.confluent.connect.avro.ConnectDefault``
when unnamed); maps with required string keys are Avro maps, other maps arrays of
``MapEntry`` records; Decimal, Date, Time and Timestamp are Avro's logical types.
"""

from __future__ import annotations

from typing import Any

from connect.api import DataError, Date, Decimal, Schema, Struct, Time, Timestamp, Type

__all__ = ["AvroMapping"]

_PRIMITIVE = {
    Type.INT32: "int", Type.INT64: "long", Type.FLOAT32: "float", Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean", Type.STRING: "string", Type.BYTES: "bytes",
}
_NAMESPACE = "io.confluent.connect.avro"
_DECIMAL_PRECISION = "connect.decimal.precision"


class AvroMapping:
    """The Avro schema of one Connect schema, and the conversion of its values to what
    fastavro writes. Build once per schema (a file has one)."""

    def __init__(self, schema: Schema) -> None:
        self._defined: dict[str, Schema] = {}
        self._unnamed = 0
        self.avro: Any = self._schema(schema, top=True)
        self.connect = schema

    # -- schemas ------------------------------------------------------------------------

    def _schema(self, schema: Schema, *, top: bool = False) -> Any:
        bare = self._bare(schema)
        if not schema.optional:
            return bare
        if schema.default_value is not None:
            return [bare, "null"]
        return ["null", bare]

    def _bare(self, schema: Schema) -> Any:
        name, t = schema.name, schema.type
        if name == Decimal.LOGICAL_NAME:
            params = schema.parameters or {}
            return {"type": "bytes", "logicalType": "decimal",
                    "precision": int(params.get(_DECIMAL_PRECISION, 64)),
                    "scale": Decimal.scale(schema), "connect.name": name}
        if name == Date.LOGICAL_NAME:
            return {"type": "int", "logicalType": "date", "connect.name": name}
        if name == Time.LOGICAL_NAME:
            return {"type": "int", "logicalType": "time-millis", "connect.name": name}
        if name == Timestamp.LOGICAL_NAME:
            return {"type": "long", "logicalType": "timestamp-millis", "connect.name": name}
        if t in (Type.INT8, Type.INT16):
            return {"type": "int", "connect.type": t.value}
        if t in _PRIMITIVE:
            return _PRIMITIVE[t]
        if t is Type.ARRAY:
            return {"type": "array", "items": self._schema(schema.value_schema)}
        if t is Type.MAP:
            key = schema.key_schema
            if key.type is Type.STRING and not key.optional:
                return {"type": "map", "values": self._schema(schema.value_schema)}
            entry = self._record_name("MapEntry", None)
            return {"type": "array", "items": {
                "type": "record", "name": entry, "fields": [
                    {"name": "key", "type": self._schema(key)},
                    {"name": "value", "type": self._schema(schema.value_schema)}]}}
        if t is Type.STRUCT:
            full = self._record_name(schema.name, schema)
            if isinstance(full, dict):
                return full["ref"]
            fields = []
            for f in schema.fields:
                field: dict[str, Any] = {"name": f.name, "type": self._schema(f.schema)}
                if f.schema.doc:
                    field["doc"] = f.schema.doc
                if f.schema.optional and f.schema.default_value is None:
                    field["default"] = None
                elif f.schema.default_value is not None:
                    field["default"] = self._default(f.schema, f.schema.default_value)
                fields.append(field)
            record: dict[str, Any] = {"type": "record", "name": full, "fields": fields}
            if schema.doc:
                record["doc"] = schema.doc
            return record
        raise DataError(f"Avro cannot represent Connect type {t.value}")

    def _record_name(self, name: str | None, schema: Schema | None) -> Any:
        """A full name not yet used in this schema (fastavro refuses redefinitions); a
        struct already defined with the same schema is referenced by name."""
        if name is None or name == "MapEntry":
            base = f"{_NAMESPACE}.{'MapEntry' if name else 'ConnectDefault'}"
            self._unnamed += 1
            full = base if self._unnamed == 1 else f"{base}{self._unnamed}"
        else:
            full = name
            if full in self._defined:
                if self._defined[full] == schema:
                    return {"ref": full}
                n = 2
                while f"{name}{n}" in self._defined:
                    n += 1
                full = f"{name}{n}"
        if schema is not None:
            self._defined[full] = schema
        return full

    def _default(self, schema: Schema, value: Any) -> Any:
        converted = self.value(schema, value)
        if isinstance(converted, bytes):
            return converted.decode("latin-1")
        if schema.name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
            return _logical_int(schema, value)
        return converted

    # -- values -------------------------------------------------------------------------

    def value(self, schema: Schema, value: Any) -> Any:
        """A Connect value of ``schema`` as fastavro writes it (logical values as
        ``decimal.Decimal``/``date``/``time``/``datetime``, which fastavro encodes)."""
        if value is None:
            return None
        t = schema.type
        if t is Type.STRUCT:
            if not isinstance(value, Struct):
                raise DataError(f"a {t.value} value must be a Struct, not "
                                f"{type(value).__name__}")
            return {f.name: self.value(f.schema, value.get(f)) for f in schema.fields}
        if t is Type.ARRAY:
            return [self.value(schema.value_schema, v) for v in value]
        if t is Type.MAP:
            ks, vs = schema.key_schema, schema.value_schema
            if ks.type is Type.STRING and not ks.optional:
                return {k: self.value(vs, v) for k, v in value.items()}
            return [{"key": self.value(ks, k), "value": self.value(vs, v)}
                    for k, v in value.items()]
        if t is Type.BYTES and schema.name != Decimal.LOGICAL_NAME:
            return bytes(value)
        return value


def _logical_int(schema: Schema, value: Any) -> int:
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    return Timestamp.from_logical(schema, value)
