"""The ferry data source's pure parts, without a JVM: option parsing, the Arrow schema
Spark requires, range splitting and the per-trigger limit."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the ferryman[spark] extra is not installed")

import itertools

from connectors.spark.arrow import kafka_arrow_fields, kafka_spark_schema
from connectors.spark.options import FerryOptionError, SinkOptions, SourceOptions
from connectors.spark.planning import OffsetRange, split_ranges
from connectors.spark.source import _limit, canonical
from core.backends import TopicPartition


@pytest.mark.parametrize("headers", [False, True])
def test_arrow_fields_equal_what_spark_requires(headers):
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    assert to_arrow_schema(kafka_spark_schema(headers), timezone="UTC") == pa.schema(
        kafka_arrow_fields(headers))


def test_source_options_follow_kafka_names():
    opts = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a, b",
                                "startingOffsets": '{"a":{"0":5,"1":-2}}',
                                "FAILONDATALOSS": "false", "minPartitions": "4"},
                               streaming=False)
    assert opts.url == "kafka://h:1" and opts.subscribe == ["a", "b"]
    assert opts.starting.offsets == {"a": {0: 5, 1: -2}}
    assert not opts.fail_on_data_loss and opts.min_partitions == 4


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "a"}, "option 'log' is required"),
    ({"log": "kafka://h:1", "subscribe": "a", "kafka.bootstrap.servers": "h:1"},
     "either option 'log' or 'kafka.bootstrap.servers'"),
    ({"log": "kafka://h:1", "assign": "[1]"}, "must look like"),
    ({"log": "kafka://h:1", "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'},
     "earliest (-2), not allowed"),
    ({"log": "kafka://h:1", "subscribe": "a", "kafka.auto.offset.reset": "x"},
     "manages it itself"),
    ({"log": "kafka://h:1", "subscribe": "a", "maxOffsetsPerTrigger": "0"},
     "'maxOffsetsPerTrigger' must be at least 1"),
    ({"log": "kafka://h:1", "subscribe": "a", "valueFormat": "avro"},
     "'schema.registry.url' is required"),
])
def test_bad_source_options(options, message, monkeypatch):
    monkeypatch.delenv("FERRY_LOG", raising=False)
    with pytest.raises(FerryOptionError) as info:
        SourceOptions.parse(options, streaming=False)
    assert message in str(info.value)


def test_streaming_refuses_ending_offsets():
    with pytest.raises(FerryOptionError, match="for batch queries only"):
        SourceOptions.parse({"log": "kafka://h:1", "subscribe": "a",
                             "endingOffsets": "latest"}, streaming=True)


def test_sink_options():
    assert SinkOptions.parse({"log": "kafka://h:1", "topic": "t"}).topic == "t"
    with pytest.raises(FerryOptionError, match="unknown option 'subscribe'"):
        SinkOptions.parse({"log": "kafka://h:1", "subscribe": "t"})


def test_split_ranges_min_partitions_and_max_records():
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 100),
              OffsetRange("t", 2, 10, 11)]
    pieces = split_ranges(ranges, 7, None)
    assert len(pieces) >= 7
    for p in range(3):
        mine = sorted((r.start, r.end) for r in pieces if r.partition == p)
        assert mine[0][0] == ranges[p].start and mine[-1][1] == ranges[p].end
        assert all(a[1] == b[0] for a, b in itertools.pairwise(mine))
    assert all(r.size <= 30 for r in split_ranges(ranges, None, 30))


def test_limit_is_shared_in_proportion_to_lag_and_offsets_are_canonical():
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    end = _limit({a0: 0, a1: 0, b0: 0}, {a0: 900, a1: 100, b0: 0}, 100)
    assert end == {a0: 90, a1: 10, b0: 0}
    assert list(canonical({b0: 1, TopicPartition("a", 10): 2, a1: 3})) == ["a", "b"]
    assert list(canonical({TopicPartition("a", 10): 2, a1: 3})["a"]) == ["1", "10"]


def test_registration_free_module_exposes_the_source():
    import pyspark_ferry
    from connectors.spark import FerryDataSource

    assert pyspark_ferry.DefaultSource is FerryDataSource
    assert FerryDataSource.name() == "ferry"


def test_trigger_options():
    opts = SourceOptions.parse({"log": "kafka://h:1", "subscribe": "a",
                                "minOffsetsPerTrigger": "10", "maxTriggerDelay": "2m",
                                "commitToGroup": "g"}, streaming=True)
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_s, opts.commit_to_group) == (
        10, 120.0, "g")
    with pytest.raises(FerryOptionError, match="'maxTriggerDelay' must be a duration"):
        SourceOptions.parse({"log": "kafka://h:1", "subscribe": "a",
                             "maxTriggerDelay": "soon"}, streaming=True)
    with pytest.raises(FerryOptionError, match="must not exceed"):
        SourceOptions.parse({"log": "kafka://h:1", "subscribe": "a",
                             "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
                            streaming=True)
