"""The S3 sink's partitioners and Joda path formats, against the paths Confluent's
storage-common partitioners produce for the same records."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from connect.api import ConfigError, DataError, SchemaBuilder, SinkRecord, Struct
from connectors.s3.config import S3SinkSettings
from connectors.s3.joda import JodaFormat
from connectors.s3.partitioners import Partitioner, load_partitioner

BASE = {"s3.bucket.name": "b", "flush.size": "1", "format.class": "JsonFormat"}
# 2024-03-10T09:59:59.999Z, 2h before the US DST switch in America/Los_Angeles (10:00Z)
T = 1710064799999


def settings(**extra: str) -> S3SinkSettings:
    return S3SinkSettings.parse({**BASE, **extra})


def record(value=None, schema=None, ts: int | None = T, partition: int = 3) -> SinkRecord:
    return SinkRecord(topic="t", kafka_partition=partition, kafka_offset=0, value=value,
                      value_schema=schema, timestamp=ts)


def test_default_partitioner() -> None:
    p = load_partitioner(settings())
    assert p.encode_partition(record()) == "partition=3"
    assert p.generate_partitioned_path("t", "partition=3") == "t/partition=3"


def test_field_partitioner_struct_and_map() -> None:
    schema = (SchemaBuilder.struct().field("region", SchemaBuilder.string().build())
              .field("n", SchemaBuilder.int32().build())
              .field("ok", SchemaBuilder.boolean().build())
              .field("f", SchemaBuilder.float64().build()).build())
    value = Struct(schema).put("region", "eu").put("n", 7).put("ok", True).put("f", 1.5)
    p = load_partitioner(settings(**{
        "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
        "partition.field.name": "region,n,ok"}))
    assert p.encode_partition(record(value, schema)) == "region=eu/n=7/ok=true"
    assert p.encode_partition(record({"region": "us", "n": 1, "ok": False})) == \
        "region=us/n=1/ok=false"
    bad = load_partitioner(settings(**{"partitioner.class": "FieldPartitioner",
                                       "partition.field.name": "f"}))
    with pytest.raises(DataError, match="only integer, string and boolean"):
        bad.encode_partition(record(value, schema))
    with pytest.raises(ConfigError, match=r"partition\.field\.name"):
        load_partitioner(settings(**{"partitioner.class": "FieldPartitioner"}))


def test_hourly_and_daily_in_utc_and_a_zone() -> None:
    hourly = load_partitioner(settings(**{
        "partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner",
        "locale": "en-US", "timezone": "UTC",
        "timestamp.extractor": "Record"}))
    assert hourly.encode_partition(record()) == "year=2024/month=03/day=10/hour=09"
    daily = load_partitioner(settings(**{
        "partitioner.class": "DailyPartitioner", "locale": "en", "timezone":
        "America/Los_Angeles", "timestamp.extractor": "Record"}))
    assert daily.encode_partition(record()) == "year=2024/month=03/day=10"
    la = load_partitioner(settings(**{
        "partitioner.class": "HourlyPartitioner", "locale": "en", "timezone":
        "America/Los_Angeles", "timestamp.extractor": "Record"}))
    assert la.encode_partition(record()) == "year=2024/month=03/day=10/hour=01"


def test_time_based_custom_format_duration_and_record_field() -> None:
    p = load_partitioner(settings(**{
        "partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": "900000",
        "path.format": "'dt'=YYYY-MM-dd/'t'=HHmm/", "locale": "en", "timezone": "UTC",
        "timestamp.extractor": "RecordField", "timestamp.field": "meta.at"}))
    assert p.encode_partition(record({"meta": {"at": T}})) == "dt=2024-03-10/t=0945"
    assert p.encode_partition(record({"meta": {"at": "2024-03-10T10:14:00Z"}})) == \
        "dt=2024-03-10/t=1000"
    with pytest.raises(DataError, match=r"meta\.at"):
        p.encode_partition(record({"meta": {}}))
    for missing, key in (({"partition.duration.ms": "-1"}, "partition.duration.ms"),
                         ({"path.format": ""}, "path.format"),
                         ({"locale": ""}, "locale"), ({"timezone": "Mars/Base"}, "timezone")):
        props = {"partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": "1000",
                 "path.format": "YYYY", "locale": "en", "timezone": "UTC", **missing}
        with pytest.raises(ConfigError) as err:
            load_partitioner(settings(**props))
        assert err.value.name == key


def test_joda_patterns() -> None:
    import datetime as dt
    when = dt.datetime(2024, 3, 5, 14, 7, 9, 123000, tzinfo=dt.UTC)
    assert JodaFormat("'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH").format(when) == \
        "year=2024/month=03/day=05/hour=14"
    assert JodaFormat("yy-MMM-d EEE h:mm:ss.SSS a ''Z''").format(when) == \
        "24-Mar-5 Tue 2:07:09.123 PM '+0000'"
    assert JodaFormat("MMMM EEEE D").format(when) == "March Tuesday 65"
    with pytest.raises(ConfigError, match="'G'"):
        JodaFormat("G YYYY")
    with pytest.raises(ConfigError, match="unterminated"):
        JodaFormat("'year=YYYY")


class ShardPartitioner(Partitioner):
    def encode_partition(self, record: SinkRecord) -> str:
        return f"shard={record.kafka_partition % 2}"


def test_custom_partitioner_from_the_entry_point_group(tmp_path: Path, monkeypatch) -> None:
    """A real distribution's metadata on sys.path registers ``shards`` in
    ``ferry.s3.partitioners``."""
    dist = tmp_path / "ferry_test_shards-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ferry-test-shards\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [ferry.s3.partitioners]
        shards = {__name__}:ShardPartitioner
        notone = {__name__}:record
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert __name__ in sys.modules
    p = load_partitioner(settings(**{"partitioner.class": "shards"}))
    assert p.encode_partition(record(partition=5)) == "shard=1"
    with pytest.raises(ConfigError, match="not a Partitioner"):
        load_partitioner(settings(**{"partitioner.class": "notone"}))
    with pytest.raises(ConfigError, match="unknown partitioner 'nope'"):
        load_partitioner(settings(**{"partitioner.class": "nope"}))
