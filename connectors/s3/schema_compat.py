"""``schema.compatibility``: when a change of value schema rotates the object, and how a
record of another schema version is projected onto the object's schema (Confluent's
``StorageSchemaCompatibility``).

NONE rotates on any change. BACKWARD and FULL rotate when a newer version arrives and
project older records onto the newer schema; FORWARD rotates when an older version
arrives and projects newer records onto the older schema. The modes other than NONE need
versioned schemas (``AvroConverter`` sets them).
"""

from __future__ import annotations

from typing import Any

from connect.api import DataError, Schema, SinkRecord, Struct, Type

__all__ = ["SchemaCompatibility"]


class SchemaCompatibility:
    def __init__(self, mode: str) -> None:
        self.mode = mode

    def should_change(self, value_schema: Schema | None, current: Schema | None) -> bool:
        if value_schema is None and current is None:
            return False
        if value_schema is None or current is None:
            raise DataError("Switch between schema-based and schema-less data is not "
                            "supported")
        if self.mode == "NONE":
            return value_schema != current
        if value_schema.version is None or current.version is None:
            raise DataError(f"Schema version required for {self.mode} compatibility")
        if self.mode == "FORWARD":
            return value_schema.version < current.version
        return value_schema.version > current.version

    def project(self, record: SinkRecord, current: Schema | None) -> SinkRecord:
        if self.mode == "NONE" or record.value_schema == current or current is None:
            return record
        value = _project(record.value_schema, record.value, current)
        return record.new_record(value_schema=current, value=value)


def _project(source: Schema | None, value: Any, target: Schema) -> Any:
    """Kafka's SchemaProjector, for what schema evolution produces: struct fields added
    (filled with their default) or removed, optional-ness relaxed, numbers widened."""
    if value is None:
        if target.optional or target.default_value is not None:
            return target.default_value
        raise DataError("cannot project a null onto a required schema")
    if source is None:
        raise DataError("cannot project a schemaless value")
    if target.type is Type.STRUCT:
        if source.type is not Type.STRUCT or not isinstance(value, Struct):
            raise DataError(f"cannot project {source.type.value} onto struct")
        out = Struct(target)
        for f in target.fields:
            src = source.field(f.name)
            if src is not None:
                out.put(f, _project(src.schema, value.get(src), f.schema))
            elif f.schema.default_value is not None or f.schema.optional:
                out.put(f, f.schema.default_value)
            else:
                raise DataError(f"field '{f.name}' is missing and has no default")
        return out
    if target.type is Type.ARRAY:
        return [_project(source.value_schema, v, target.value_schema) for v in value]
    if target.type is Type.MAP:
        return {_project(source.key_schema, k, target.key_schema):
                _project(source.value_schema, v, target.value_schema) for k, v in value.items()}
    if source.type is not target.type:
        widened = {Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64}
        if source.type in widened and target.type in widened:
            return float(value) if target.type in (Type.FLOAT32, Type.FLOAT64) else int(value)
        raise DataError(f"cannot project {source.type.value} onto {target.type.value}")
    return value
