"""Parquet objects through pyarrow: records are converted as they arrive and written as
row groups of ``ROW_GROUP_ROWS`` into the output stream, so memory is one row group and
one upload part whatever the object's size."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from connect.api import DataError, Date, Decimal, Schema, SinkRecord, Struct, Time, Timestamp, Type
from connectors.s3.formats import RecordWriter
from connectors.s3.output_stream import S3OutputStream

__all__ = ["ParquetFileWriter", "arrow_type"]

ROW_GROUP_ROWS = 20_000

_PRIMITIVE = {
    # INT8/INT16 are INT32 in Parquet, as Confluent's Avro-based writer stores them.
    Type.INT8: pa.int32(), Type.INT16: pa.int32(), Type.INT32: pa.int32(),
    Type.INT64: pa.int64(), Type.FLOAT32: pa.float32(), Type.FLOAT64: pa.float64(),
    Type.BOOLEAN: pa.bool_(), Type.STRING: pa.string(), Type.BYTES: pa.binary(),
}


def arrow_type(schema: Schema) -> pa.DataType:
    """The Arrow type of a Connect schema (logical types as Arrow's own)."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        precision = int((schema.parameters or {}).get("connect.decimal.precision", 38))
        return pa.decimal128(min(precision, 38), Decimal.scale(schema))
    if name == Date.LOGICAL_NAME:
        return pa.date32()
    if name == Time.LOGICAL_NAME:
        return pa.time32("ms")
    if name == Timestamp.LOGICAL_NAME:
        return pa.timestamp("ms", tz="UTC")
    t = schema.type
    if t in _PRIMITIVE:
        return _PRIMITIVE[t]
    if t is Type.ARRAY:
        return pa.list_(arrow_type(schema.value_schema))
    if t is Type.MAP:
        return pa.map_(arrow_type(schema.key_schema), arrow_type(schema.value_schema))
    return pa.struct([pa.field(f.name, arrow_type(f.schema), nullable=f.schema.optional)
                      for f in schema.fields])


def _row(schema: Schema, value: Any) -> Any:
    if value is None:
        return None
    t = schema.type
    if t is Type.STRUCT:
        if not isinstance(value, Struct):
            raise DataError(f"a struct value must be a Struct, not {type(value).__name__}")
        return {f.name: _row(f.schema, value.get(f)) for f in schema.fields}
    if t is Type.ARRAY:
        return [_row(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        return [(_row(schema.key_schema, k), _row(schema.value_schema, v))
                for k, v in value.items()]
    return value


class ParquetFileWriter(RecordWriter):
    def __init__(self, stream: S3OutputStream, schema: Schema, codec: str) -> None:
        super().__init__(stream)
        if schema.type is not Type.STRUCT:
            raise DataError(f"ParquetFormat writes struct values; the value schema is "
                            f"{schema.type.value}")
        self._schema = schema
        self._arrow = pa.schema([pa.field(f.name, arrow_type(f.schema),
                                          nullable=f.schema.optional)
                                 for f in schema.fields])
        self._writer = pq.ParquetWriter(stream, self._arrow,
                                        compression=None if codec == "none" else codec)
        self._rows: list[dict[str, Any]] = []

    def write(self, record: SinkRecord) -> None:
        schema = record.value_schema
        if schema is not self._schema and schema != self._schema:
            raise DataError("the record's value schema differs from the object's (a "
                            "schema.compatibility rotation should have happened)")
        if not isinstance(record.value, Struct):
            raise DataError(f"a struct value must be a Struct, not "
                            f"{type(record.value).__name__}")
        # Converters build Structs checked against their schema, and the schema is the
        # object's, so the row converts; the check is per record, not per row group, so
        # a bad record never poisons a row group of good ones.
        record.value.validate()
        self._rows.append(_row(self._schema, record.value))
        if len(self._rows) >= ROW_GROUP_ROWS:
            self._flush_rows()

    def _flush_rows(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._arrow))
            self._rows = []

    def _finish(self) -> None:
        self._flush_rows()
        self._writer.close()
