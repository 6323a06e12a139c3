"""Batch reads of ``format("ferry")`` on a real broker: contents and schema equal to what
was produced (keys, headers, timestamps, 3 partitions), offset ranges, timestamps, splits,
and bad options failing at planning time with the option named."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from core.backends import ProducerRecord, open_backend

TOPIC = "batch-3p"
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def produced(log_url: str) -> list[tuple]:
    """300 records over 3 partitions: (partition, offset, key, value, headers, ts)."""
    out = []
    with open_backend(log_url) as backend:
        backend.create_topic(TOPIC, 3)
        for p in range(3):
            records = [ProducerRecord(f"k{p}-{i}".encode(), f"v{p}-{i}".encode() * 3,
                                      [("h", f"{i}".encode()), ("n", None)] if i % 2 else (),
                                      BASE_TS + i * 1000, p)
                       for i in range(100)]
            for meta, rec in zip(backend.produce(TOPIC, records), records, strict=True):
                out.append((p, meta.offset, rec.key, rec.value, list(rec.headers),
                            rec.timestamp))
        backend.create_topic("other", 1)
        backend.produce("other", [ProducerRecord(b"x", b"y")])
    return out


def _read(spark, log_url, **options):
    reader = spark.read.format("ferry").option("log", log_url)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_schema_and_contents_equal_what_was_produced(spark, log_url, produced):
    df = _read(spark, log_url, subscribe=TOPIC, includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>")
    rows = df.collect()
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value),
                  [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers],
                  int(r.timestamp.replace(tzinfo=dt.UTC).timestamp() * 1000)
                  if r.timestamp.tzinfo is None else int(r.timestamp.timestamp() * 1000))
                 for r in rows)
    assert got == sorted(produced)
    assert {r.topic for r in rows} == {TOPIC}
    assert {r.timestampType for r in rows} == {0}


def test_without_headers_and_kafka_bootstrap_alias(spark, log_url, produced):
    df = (spark.read.format("ferry")
          .option("kafka.bootstrap.servers", log_url.removeprefix("kafka://"))
          .option("subscribePattern", "batch-.*").load())
    assert "headers" not in df.columns
    assert df.count() == 300


def test_offset_ranges_and_assign(spark, log_url, produced):
    df = _read(spark, log_url, assign=json.dumps({TOPIC: [0, 2]}),
               startingOffsets=json.dumps({TOPIC: {"0": 10, "2": -2}}),
               endingOffsets=json.dumps({TOPIC: {"0": 20, "2": -1}}))
    rows = df.select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == (
        [(0, o) for o in range(10, 20)] + [(2, o) for o in range(100)])


def test_starting_timestamp(spark, log_url, produced):
    df = _read(spark, log_url, subscribe=TOPIC, startingTimestamp=str(BASE_TS + 90_000),
               endingOffsetsByTimestamp=json.dumps(
                   {TOPIC: {"0": BASE_TS + 95_000, "1": BASE_TS + 10**9, "2": BASE_TS + 92_000}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == ([(0, o) for o in range(90, 95)] + [(1, o) for o in range(90, 100)]
                   + [(2, 90), (2, 91)])


def test_min_partitions_splits_ranges(spark, log_url, produced):
    df = _read(spark, log_url, subscribe=TOPIC, minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    offsets = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert offsets == sorted((p, o) for p, o, *_ in produced)
    df = _read(spark, log_url, subscribe=TOPIC, maxRecordsPerPartition="30")
    assert df.rdd.getNumPartitions() == 12
    assert df.count() == 300


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": TOPIC, "assign": '{"x":[0]}'}, "exactly one of the options"),
    ({"subscribe": "no-such-topic"}, "topic 'no-such-topic' does not exist"),
    ({"subscribe": TOPIC, "startingOffsets": "{not json"}, "'startingOffsets' is not valid JSON"),
    ({"subscribe": TOPIC, "colour": "blue"}, "unknown option 'colour'"),
    ({"subscribe": TOPIC, "endingOffsets": json.dumps({TOPIC: {"0": 5}})},
     "must give every selected partition"),
    ({"subscribe": TOPIC, "failOnDataLoss": "maybe"}, "'failOnDataLoss' must be true or false"),
    ({"subscribe": TOPIC, "startingOffsets": "latest"}, "cannot be latest in a batch query"),
])
def test_bad_options_fail_at_planning_naming_the_option(spark, log_url, produced, options,
                                                        message):
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        _read(spark, log_url, **options).count()
    assert message in str(info.value)


def test_embedded_log_is_refused_with_a_reason(spark, tmp_path):
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:
        (spark.read.format("ferry").option("log", f"embedded:{tmp_path}")
         .option("subscribe", "t").load())
    assert "locked by one process" in str(info.value)
