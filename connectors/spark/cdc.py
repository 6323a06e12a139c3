"""``format("ferry-cdc")``: Debezium change events as rows with an ``op`` column.

Reads topics written by a Debezium-compatible CDC connector (Ferry's Postgres connector)
through Connect's ``JsonConverter``: each value is ``{"schema": ..., "payload": {"before",
"after", "source", "op", "ts_ms"}}`` (or the bare payload with ``schemas.enable=false``).
Each event becomes one row::

    op            c (insert), u (update), d (delete), r (snapshot read), t (truncate)
    <columns>     the table's row: ``after``, or ``before`` for a delete
    _source_ts_ms when the change happened in the database (source.ts_ms)
    _topic, _partition, _offset, _timestamp   where the event is in the log

Tombstones (null values that follow deletes for compaction) are skipped. The row columns
come from the Connect schema of the newest event on the driver, or from a user schema
(``.schema("op string, id int, ...")``), which an empty topic needs. Every option of
``format("ferry")`` applies (batch and streaming).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import types as t

from connectors.spark.datasource import FerryDataSource
from connectors.spark.options import FerryOptionError, SourceOptions
from connectors.spark.planning import topic_partitions
from core.backends import OffsetSpec, open_backend

__all__ = ["CdcDecoding", "FerryCdcDataSource", "connect_to_spark"]

#: How many newest records per partition the driver looks at for an event's schema.
_PEEK = 20
_META = [("_source_ts_ms", t.LongType()), ("_topic", t.StringType()),
         ("_partition", t.IntegerType()), ("_offset", t.LongType()),
         ("_timestamp", t.TimestampType())]
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def connect_to_spark(schema: dict[str, Any]) -> t.DataType:
    """The Spark type of a Connect schema as JsonConverter writes it."""
    name, kind = schema.get("name"), schema.get("type")
    if name in ("io.debezium.time.MicroTimestamp", "io.debezium.time.Timestamp",
                "io.debezium.time.NanoTimestamp", "io.debezium.time.ZonedTimestamp",
                "org.apache.kafka.connect.data.Timestamp"):
        return t.TimestampType()
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return t.DateType()
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int((schema.get("parameters") or {}).get("scale", 0))
        return t.DecimalType(38, scale)
    simple = {"int8": t.ByteType, "int16": t.ShortType, "int32": t.IntegerType,
              "int64": t.LongType, "float32": t.FloatType, "float64": t.DoubleType,
              "boolean": t.BooleanType, "string": t.StringType, "bytes": t.BinaryType}
    if kind in simple:
        return simple[kind]()
    if kind == "struct":
        return t.StructType([t.StructField(f["field"], connect_to_spark(f))
                             for f in schema.get("fields", [])])
    if kind == "array":
        return t.ArrayType(connect_to_spark(schema["items"]))
    if kind == "map":
        return t.MapType(connect_to_spark(schema["keys"]), connect_to_spark(schema["values"]))
    raise FerryOptionError(f"the change events' Connect type {kind!r} has no Spark type")


def _converter(schema: dict[str, Any] | None):
    """A function from a JsonConverter value to what pyarrow takes for its Spark type."""
    name = (schema or {}).get("name")
    if name == "io.debezium.time.MicroTimestamp":
        return lambda v: _EPOCH + dt.timedelta(microseconds=v)
    if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return lambda v: _EPOCH + dt.timedelta(milliseconds=v)
    if name == "io.debezium.time.NanoTimestamp":
        return lambda v: _EPOCH + dt.timedelta(microseconds=v // 1000)
    if name == "io.debezium.time.ZonedTimestamp":
        # timestamptz: an ISO 8601 string of an instant (Debezium writes it in UTC, "Z");
        # a Spark timestamp is an instant too, so event-time windows work on it.
        return dt.datetime.fromisoformat
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return lambda v: dt.date(1970, 1, 1) + dt.timedelta(days=v)
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int((schema.get("parameters") or {}).get("scale", 0))
        return lambda v: decimal.Decimal(
            int.from_bytes(base64.b64decode(v), "big", signed=True)).scaleb(-scale)
    if (schema or {}).get("type") == "bytes":
        return base64.b64decode
    return None


@dataclass
class CdcDecoding:
    """Turns the Kafka columns of a fetched batch into change rows (``Decoding``'s role)."""

    include_headers: bool
    row_type: t.StructType
    row_schema: dict[str, Any] | None = None  # the Connect schema of the row, when known
    output: t.StructType | None = None  # a user-given schema, else op + row + metadata
    _types: dict[str, pa.DataType] = field(default_factory=dict, repr=False)

    def spark_schema(self) -> t.StructType:
        if self.output is not None:
            return self.output
        return t.StructType([t.StructField("op", t.StringType()), *self.row_type.fields,
                             *(t.StructField(n, typ) for n, typ in _META)])

    @property
    def transform(self):
        return self._apply

    def _apply(self, columns: dict[str, pa.Array]) -> dict[str, pa.Array]:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not self._types:
            schema = to_arrow_schema(self.spark_schema(), timezone="UTC")
            self._types = {f.name: f.type for f in schema}
        converters = {}
        for f in (self.row_schema or {}).get("fields", []):
            conv = _converter(f)
            if conv is not None:
                converters[f["field"]] = conv
        keep, ops, rows, source_ts = [], [], [], []
        for i, raw in enumerate(columns["value"].to_pylist()):
            if raw is None:
                continue  # a tombstone
            event = json.loads(raw)
            payload = event["payload"] if isinstance(event, dict) and "payload" in event \
                and "schema" in event else event
            op = payload.get("op")
            row = payload.get("before") if op == "d" else payload.get("after")
            row = dict(row or {})
            for name, conv in converters.items():
                if row.get(name) is not None:
                    row[name] = conv(row[name])
            keep.append(i)
            ops.append(op)
            rows.append(row)
            source_ts.append((payload.get("source") or {}).get("ts_ms"))
        take = pa.array(keep, pa.int64())
        out = {"op": pa.array(ops, pa.string())}
        for f in self.row_type.fields:
            out[f.name] = pa.array([r.get(f.name) for r in rows], self._types[f.name])
        if self.output is not None:  # a user schema may type metadata differently
            out = {n: a if n not in self._types or a.type == self._types[n]
                   else a.cast(self._types[n]) for n, a in out.items()}
        out["_source_ts_ms"] = pa.array(source_ts, pa.int64())
        for meta, kafka in (("_topic", "topic"), ("_partition", "partition"),
                            ("_offset", "offset"), ("_timestamp", "timestamp")):
            out[meta] = columns[kafka].take(take)
        return out


def _row_schema_from_events(opts: SourceOptions) -> dict[str, Any]:
    """The Connect schema of the row in the newest change event of the selected topics."""
    with open_backend(opts.url, opts.client_config) as backend:
        tps = topic_partitions(backend, opts)
        latest = backend.list_offsets(tps, OffsetSpec.LATEST) if tps else {}
        earliest = backend.list_offsets(tps, OffsetSpec.EARLIEST) if tps else {}
        best: tuple[int, dict[str, Any]] | None = None
        for tp in tps:
            start = max(earliest[tp], latest[tp] - _PEEK)
            if start >= latest[tp]:
                continue
            for record in backend.fetch({tp: start})[tp].records:
                if record.value is None:
                    continue
                try:
                    event = json.loads(record.value)
                except ValueError:
                    raise FerryOptionError(
                        f"{tp.topic}-{tp.partition} offset {record.offset} is not a JSON "
                        "change event; ferry-cdc reads Debezium events written with "
                        "Connect's JsonConverter") from None
                if not (isinstance(event, dict) and "schema" in event):
                    raise FerryOptionError(
                        "the change events carry no schema (JsonConverter "
                        "schemas.enable=false): give the row columns with "
                        ".schema('op string, id int, ...')")
                if best is None or record.timestamp >= best[0]:
                    best = (record.timestamp, event["schema"])
    if best is None:
        raise FerryOptionError(
            "no change event to learn the table's columns from yet: give them with "
            ".schema('op string, id int, ...')")
    for f in best[1].get("fields", []):
        if f.get("field") in ("after", "before") and f.get("type") == "struct":
            return f
    raise FerryOptionError("the events' schema has no before/after struct: not a Debezium "
                           "change event envelope")


class FerryCdcDataSource(FerryDataSource):
    """``format("ferry-cdc")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "ferry-cdc"

    def _decoding(self, *, streaming: bool):
        opts = SourceOptions.parse(self.options, streaming=streaming)
        if (opts.value_format, opts.key_format) != ("raw", "raw"):
            raise FerryOptionError("ferry-cdc decodes the change events itself; remove "
                                   "valueFormat/keyFormat")
        row = _row_schema_from_events(opts)
        row_type = connect_to_spark(row)
        if "op" in row_type.names:
            raise FerryOptionError("the table has a column named 'op', which ferry-cdc "
                                   "uses for the change type")
        return opts, CdcDecoding(opts.include_headers, row_type, row)

    def schema(self) -> t.StructType:
        streaming = not any(k.lower().startswith("ending") for k in self.options)
        return self._decoding(streaming=streaming)[1].spark_schema()

    def _given(self, schema: t.StructType, *, streaming: bool):
        """Options and decoding for ``schema``: ours from schema(), or the user's."""
        if "op" not in schema.names:
            raise FerryOptionError("a ferry-cdc schema must have an 'op' string column")
        opts = SourceOptions.parse(self.options, streaming=streaming)
        try:
            _, derived = self._decoding(streaming=streaming)
        except FerryOptionError:
            derived = None
        if derived is not None and derived.spark_schema() == schema:
            return opts, derived
        meta = {m for m, _ in _META}
        row = t.StructType([f for f in schema.fields if f.name != "op" and f.name not in meta])
        return opts, CdcDecoding(opts.include_headers, row,
                                 derived.row_schema if derived else None, output=schema)

    def reader(self, schema: t.StructType):
        from connectors.spark.source import FerryBatchReader

        opts, decoding = self._given(schema, streaming=False)
        return FerryBatchReader(opts, decoding, decoding.spark_schema())

    def streamReader(self, schema: t.StructType):
        from connectors.spark.source import FerryStreamReader

        opts, decoding = self._given(schema, streaming=True)
        return FerryStreamReader(opts, decoding, decoding.spark_schema())

    def writer(self, schema, overwrite):
        raise FerryOptionError("ferry-cdc only reads; write with format('ferry')")

    def streamWriter(self, schema, overwrite):
        raise FerryOptionError("ferry-cdc only reads; write with format('ferry')")
