"""LogBackend contract: topic admin, produce, fetch, offsets. Runs on every backend."""

from __future__ import annotations

import threading
import time

import pytest

from core.backends import (
    OffsetAndMetadata,
    OffsetSpec,
    ProducerRecord,
    TimestampType,
    TopicPartition,
    partition_for_key,
)
from core.backends import errors as be


def test_topic_admin_round_trip(backend):
    backend.create_topic("orders", 3, {"retention.ms": "3600000"})
    assert "orders" in backend.list_topics()
    desc = backend.describe_topic("orders")
    assert [p.partition for p in desc.partitions] == [0, 1, 2]
    assert desc.configs["retention.ms"] == "3600000"
    assert desc.configs["cleanup.policy"] == "delete"
    assert desc.overrides == {"retention.ms": "3600000"}
    assert all(p.log_start_offset == 0 and p.high_watermark == 0 for p in desc.partitions)
    assert backend.partition_count("orders") == 3

    backend.alter_topic_configs("orders", {"segment.bytes": "1048576"}, ["retention.ms"])
    desc = backend.describe_topic("orders")
    assert desc.overrides == {"segment.bytes": "1048576"}
    assert desc.configs["retention.ms"] == "604800000"

    backend.delete_topic("orders")
    assert "orders" not in backend.list_topics()
    with pytest.raises(be.UnknownTopicError):
        backend.describe_topic("orders")


def test_topic_admin_errors(backend):
    backend.create_topic("t", 1)
    with pytest.raises(be.TopicExistsError):
        backend.create_topic("t", 1)
    with pytest.raises(be.InvalidTopicError):
        backend.create_topic("bad name!", 1)
    with pytest.raises(be.InvalidTopicError):
        backend.create_topic("zero", 0)
    with pytest.raises(be.InvalidConfigError) as info:
        backend.create_topic("cfg", 1, {"retention.ms": "forever"})
    assert info.value.key == "retention.ms"
    with pytest.raises(be.InvalidConfigError) as info:
        backend.create_topic("cfg", 1, {"no.such.config": "1"})
    assert info.value.key == "no.such.config"
    assert "cfg" not in backend.list_topics()
    backend.commit_offsets("g", {TopicPartition("t", 0): OffsetAndMetadata(1)})
    assert "__consumer_offsets" in backend.list_topics(include_internal=True)
    assert "__consumer_offsets" not in backend.list_topics()
    with pytest.raises(be.InvalidTopicError):
        backend.delete_topic("__consumer_offsets")
    backend.create_topic("validated", 1, validate_only=True)
    assert "validated" not in backend.list_topics()
    for call in (lambda: backend.delete_topic("nope"), lambda: backend.partition_count("nope"),
                 lambda: backend.alter_topic_configs("nope", {"retention.ms": "1"})):
        with pytest.raises(be.UnknownTopicError):
            call()


def test_default_partition_count_from_backend_config(backend):
    backend.create_topic("defaulted")
    assert backend.partition_count("defaulted") >= 1


def test_produce_places_keys_like_kafka(backend):
    backend.create_topic("keyed", 4)
    keys = [f"user-{i}".encode() for i in range(40)]
    metas = backend.produce("keyed", [ProducerRecord(key=k, value=b"v") for k in keys])
    for key, meta in zip(keys, metas, strict=True):
        assert meta.partition == partition_for_key(key, 4)
        assert meta.topic == "keyed"
    # Offsets within each partition are dense and in input order.
    per_partition: dict[int, list[int]] = {}
    for meta in metas:
        per_partition.setdefault(meta.partition, []).append(meta.offset)
    for offsets in per_partition.values():
        assert offsets == list(range(len(offsets)))


def test_unkeyed_records_of_one_call_share_a_partition(backend):
    backend.create_topic("sticky", 3)
    first = backend.produce("sticky", [ProducerRecord(value=b"%d" % i) for i in range(10)])
    assert len({m.partition for m in first}) == 1
    second = backend.produce("sticky", [ProducerRecord(value=b"x")])
    assert second[0].partition != first[0].partition


def test_round_trip_of_keys_values_headers_timestamps(backend):
    backend.create_topic("rt", 2)
    records = [
        ProducerRecord(key=b"k1", value=b"v1", headers=[("h", b"1"), ("h", None)],
                       timestamp=1_700_000_000_000, partition=1),
        ProducerRecord(key=None, value=None, partition=1, timestamp=1_700_000_000_001),
        ProducerRecord(key=b"", value=b"", partition=1, timestamp=1_700_000_000_002),
    ]
    metas = backend.produce("rt", records)
    assert [m.offset for m in metas] == [0, 1, 2]
    assert [m.timestamp for m in metas] == [r.timestamp for r in records]
    tp = TopicPartition("rt", 1)
    result = backend.fetch({tp: 0})[tp]
    got = [(r.key, r.value, [tuple(h) for h in r.headers], r.timestamp, r.offset)
           for r in result.records]
    assert got == [
        (b"k1", b"v1", [("h", b"1"), ("h", None)], 1_700_000_000_000, 0),
        (None, None, [], 1_700_000_000_001, 1),
        (b"", b"", [], 1_700_000_000_002, 2),
    ]
    assert all(r.timestamp_type == TimestampType.CREATE_TIME for r in result.records)
    assert (result.high_watermark, result.log_start_offset, result.next_offset) == (3, 0, 3)


def test_missing_timestamp_is_produce_time(backend):
    backend.create_topic("ts", 1)
    before = int(time.time() * 1000)
    meta = backend.produce("ts", [ProducerRecord(value=b"x")])[0]
    after = int(time.time() * 1000)
    assert before <= meta.timestamp <= after
    tp = TopicPartition("ts", 0)
    assert backend.fetch({tp: 0})[tp].records[0].timestamp == meta.timestamp


def test_log_append_time_topic(backend):
    backend.create_topic("lat", 1, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    meta = backend.produce("lat", [ProducerRecord(value=b"x", timestamp=5)])[0]
    assert meta.timestamp >= before
    tp = TopicPartition("lat", 0)
    record = backend.fetch({tp: 0})[tp].records[0]
    assert record.timestamp == meta.timestamp
    assert record.timestamp_type == TimestampType.LOG_APPEND_TIME


def test_produce_errors(backend):
    backend.create_topic("p", 2)
    with pytest.raises(be.UnknownTopicError):
        backend.produce("missing", [ProducerRecord(value=b"x")])
    with pytest.raises(be.UnknownTopicError):
        backend.produce("p", [ProducerRecord(value=b"x", partition=2)])
    backend.create_topic("small", 1, {"max.message.bytes": "1000"})
    with pytest.raises(be.RecordTooLargeError):
        backend.produce("small", [ProducerRecord(value=b"x" * 2000)])
    tp = TopicPartition("small", 0)
    assert backend.fetch({tp: 0})[tp].records == []


def test_large_produce_call_is_split_into_batches(backend):
    backend.create_topic("big", 1)
    value = b"x" * 1024
    metas = backend.produce("big", [ProducerRecord(value=value) for _ in range(3000)])
    assert [m.offset for m in metas] == list(range(3000))
    tp = TopicPartition("big", 0)
    offset, seen = 0, 0
    while offset < 3000:
        result = backend.fetch({tp: offset})[tp]
        assert result.records, "fetch must make progress"
        assert result.records[0].offset == offset
        seen += len(result.records)
        offset = result.next_offset
    assert seen == 3000


def test_fetch_from_the_middle_and_the_end(backend):
    backend.create_topic("mid", 1)
    backend.produce("mid", [ProducerRecord(value=b"%d" % i) for i in range(10)])
    tp = TopicPartition("mid", 0)
    result = backend.fetch({tp: 7})[tp]
    assert [r.offset for r in result.records] == [7, 8, 9]
    assert result.next_offset == 10
    end = backend.fetch({tp: 10})[tp]
    assert end.records == [] and end.next_offset == 10 and end.high_watermark == 10


def test_fetch_out_of_range(backend):
    backend.create_topic("oor", 1)
    backend.produce("oor", [ProducerRecord(value=b"x")])
    tp = TopicPartition("oor", 0)
    with pytest.raises(be.OffsetOutOfRangeError) as info:
        backend.fetch({tp: 5})
    assert info.value.log_end_offset == 1
    with pytest.raises(be.UnknownTopicError):
        backend.fetch({TopicPartition("oor", 3): 0})


def test_fetch_returns_every_requested_partition(backend):
    backend.create_topic("multi", 3)
    backend.produce("multi", [ProducerRecord(value=b"a", partition=1)])
    positions = {TopicPartition("multi", p): 0 for p in range(3)}
    result = backend.fetch(positions)
    assert set(result) == set(positions)
    assert [len(result[tp].records) for tp in sorted(positions)] == [0, 1, 0]


def test_long_poll_wakes_on_append(backend):
    backend.create_topic("poll", 2)
    tp = TopicPartition("poll", 1)
    started = threading.Event()

    def produce_later() -> None:
        started.wait(5)
        backend.produce("poll", [ProducerRecord(value=b"late", partition=1)])

    producer = threading.Thread(target=produce_later)
    producer.start()
    try:
        started.set()
        result = backend.fetch({TopicPartition("poll", 0): 0, tp: 0}, max_wait_ms=30000)
    finally:
        producer.join(10)
    # The wait ended because of the append, not the 30 s timeout: the record is there.
    assert [r.value for r in result[tp].records] == [b"late"]


def test_long_poll_times_out_empty(backend):
    backend.create_topic("quiet", 1)
    tp = TopicPartition("quiet", 0)
    result = backend.fetch({tp: 0}, max_wait_ms=50)
    assert result[tp].records == []


def test_list_offsets(backend):
    backend.create_topic("lo", 1)
    tp = TopicPartition("lo", 0)
    assert backend.list_offsets([tp], OffsetSpec.EARLIEST) == {tp: 0}
    assert backend.list_offsets([tp], OffsetSpec.LATEST) == {tp: 0}
    backend.produce("lo", [ProducerRecord(value=b"%d" % i, timestamp=1000 + 10 * i)
                           for i in range(5)])
    assert backend.list_offsets([tp], OffsetSpec.LATEST) == {tp: 5}
    assert backend.list_offsets([tp], 1000) == {tp: 0}
    assert backend.list_offsets([tp], 1015) == {tp: 2}
    assert backend.list_offsets([tp], 1040) == {tp: 4}
    assert backend.list_offsets([tp], 5000) == {tp: -1}
    assert backend.list_offsets([tp], OffsetSpec.MAX_TIMESTAMP) == {tp: 4}


def test_data_survives_reopen(harness, backend):
    backend.create_topic("durable", 2, {"cleanup.policy": "compact"})
    backend.produce("durable", [ProducerRecord(key=b"k%d" % i, value=b"v") for i in range(20)])
    again = harness.reopen(backend)
    desc = again.describe_topic("durable")
    assert desc.overrides == {"cleanup.policy": "compact"}
    assert sum(p.high_watermark for p in desc.partitions) == 20


def test_closed_backend_refuses_calls(harness):
    backend = harness.open()
    backend.close()
    backend.close()
    with pytest.raises(be.BackendError):
        backend.list_topics()
