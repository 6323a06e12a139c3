"""``format("ferry-cdc")``'s decoding of Debezium's temporal types, without a JVM."""

from __future__ import annotations

import datetime as dt
import json

import pytest

pytest.importorskip("pyspark", reason="the ferryman[spark] extra is not installed")

import pyarrow as pa
from pyspark.sql import types as t

from connectors.spark.cdc import CdcDecoding, connect_to_spark

ROW = {"type": "struct", "optional": True, "name": "shop.public.orders.Value", "fields": [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": False, "name": "io.debezium.time.ZonedTimestamp",
     "version": 1, "field": "created_at"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
     "version": 1, "field": "shipped"}]}


def test_zoned_timestamps_are_spark_timestamps_of_the_same_instant():
    """PostgreSQL's timestamptz arrives as an ISO 8601 string (ZonedTimestamp); it must be a
    timestamp column (event-time windows and watermarks need one), not a string."""
    row_type = connect_to_spark(ROW)
    assert row_type["created_at"].dataType == t.TimestampType()
    decoding = CdcDecoding(include_headers=False, row_type=row_type, row_schema=ROW)
    values = [{"schema": {}, "payload": {"op": "c", "before": None, "source": {"ts_ms": 1},
                                         "after": {"id": i, "created_at": zoned,
                                                   "shipped": 1767225600000000}}}
              for i, zoned in enumerate(["2026-01-01T10:04:00.25Z", "2026-01-01T10:00:00Z"])]
    n = len(values)
    out = decoding.transform({
        "value": pa.array([json.dumps(v).encode() for v in values], pa.binary()),
        "topic": pa.array(["t"] * n), "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
        "timestamp": pa.array([0] * n, pa.timestamp("us", tz="UTC"))})
    assert out["created_at"].to_pylist() == [
        dt.datetime(2026, 1, 1, 10, 4, 0, 250000, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)]
    assert out["shipped"].to_pylist() == [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)] * 2
