"""The kafka backend's pure pieces: record decoding rules, batching, partitioning, metadata."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import MetadataResponse

from core.backends import ProducerRecord, TopicPartition, partition_for_key
from core.backends import errors as be
from core.backends.batching import assign_partitions, encode_batches
from core.backends.kafka.codes import config_key_from_message, kafka_error
from core.backends.kafka.connection import TransportError, _skip_tagged_fields
from core.backends.kafka.fetch import decode_records
from core.backends.kafka.metadata import parse_metadata, topic_id_string
from core.log.records import COMPRESSION_CODES, crc32c, encode_batch, validate_batch

TP = TopicPartition("t", 2)


def _batch(base: int, values: list[bytes], compression: int = 0) -> bytes:
    return bytes(encode_batch([(None, v, [], 1000 + i) for i, v in enumerate(values)],
                              base_offset=base, compression=compression))


@pytest.mark.parametrize("codec", sorted(COMPRESSION_CODES))
def test_decode_records_of_every_codec(codec):
    data = _batch(0, [b"a", b"b"], COMPRESSION_CODES[codec]) + _batch(2, [b"c"])
    records, next_offset, needed = decode_records(TP, 0, data)
    assert [(r.offset, r.value, r.partition) for r in records] == [(0, b"a", 2), (1, b"b", 2),
                                                                  (2, b"c", 2)]
    assert (next_offset, needed) == (3, 0)


def test_first_batch_may_start_below_the_fetch_offset():
    records, next_offset, _ = decode_records(TP, 3, _batch(0, [b"%d" % i for i in range(5)]))
    assert [r.offset for r in records] == [3, 4]
    assert next_offset == 5


def test_trailing_partial_batch_is_ignored():
    whole, partial = _batch(0, [b"a"]), _batch(1, [b"b" * 50])
    records, next_offset, needed = decode_records(TP, 0, whole + partial[:30])
    assert [r.value for r in records] == [b"a"]
    assert (next_offset, needed) == (1, 0)


def test_data_without_a_whole_batch_reports_the_size_it_needs():
    batch = _batch(7, [b"x" * 100])
    records, next_offset, needed = decode_records(TP, 7, batch[:40])
    assert (records, next_offset, needed) == ([], 7, len(batch))


def test_empty_or_null_records_return_the_fetch_offset():
    assert decode_records(TP, 4, None) == ([], 4, 0)
    assert decode_records(TP, 4, b"") == ([], 4, 0)


def test_corrupt_batch_is_a_corrupt_record_error():
    data = bytearray(_batch(0, [b"abc"]))
    data[-1] ^= 0xFF
    with pytest.raises(be.CorruptRecordError):
        decode_records(TP, 0, bytes(data))


def test_control_batch_advances_next_offset_without_records():
    data = bytearray(_batch(5, [b"marker"]))
    data[22] |= 0x20  # the control bit of the (big-endian) attributes
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))  # keep the CRC valid
    records, next_offset, _ = decode_records(TP, 5, bytes(data))
    assert records == [] and next_offset == 6


# ---------------------------------------------------------------------- produce pieces


def test_keyed_records_go_where_kafka_puts_them():
    records = [ProducerRecord(key=b"k%d" % i, value=b"v") for i in range(50)]
    groups = assign_partitions("t", records, 5, lambda: 0)
    for partition, indexes in groups.items():
        assert all(partition_for_key(records[i].key, 5) == partition for i in indexes)
    assert sorted(i for ix in groups.values() for i in ix) == list(range(50))


def test_a_single_partition_takes_every_record_without_hashing_and_checks_explicit_ones():
    keyed = [ProducerRecord(key=b"k%d" % i, value=b"v") for i in range(5)]
    mixed = [*keyed, ProducerRecord(value=b"unkeyed")]
    assert assign_partitions("t", mixed, 1, lambda: 7) == {0: list(range(6))}
    assert assign_partitions("t", [ProducerRecord(key=b"k", value=b"v", partition=0)], 1,
                             lambda: 7) == {0: [0]}
    with pytest.raises(be.UnknownTopicError, match="partition 1"):
        assign_partitions("t", [*keyed, ProducerRecord(value=b"v", partition=1)], 1,
                          lambda: 0)


def test_unkeyed_records_share_the_sticky_partition_and_explicit_ones_stay():
    records = [ProducerRecord(value=b"a"), ProducerRecord(value=b"b", partition=3),
               ProducerRecord(value=b"c")]
    assert assign_partitions("t", records, 4, lambda: 1) == {1: [0, 2], 3: [1]}
    assert assign_partitions("t", records[:1] * 3, 4, lambda: 2) == {2: [0, 1, 2]}
    with pytest.raises(be.UnknownTopicError, match="partition 3"):
        assign_partitions("t", records, 3, lambda: 0)


def test_small_calls_are_one_batch_and_huge_ones_are_split():
    small = [ProducerRecord(value=b"x" * 100)] * 1000
    (only,) = encode_batches(small, list(range(1000)), compression=0, now=5)
    assert only[0] == list(range(1000)) and validate_batch(only[1]).records_count == 1000
    big = [ProducerRecord(value=b"y" * 1024)] * 3000
    parts = encode_batches(big, list(range(3000)), compression=0, now=5)
    assert len(parts) > 1
    assert [i for indexes, _ in parts for i in indexes] == list(range(3000))
    assert all(len(data) <= 1_000_000 for _, data in parts)


# ---------------------------------------------------------------------- metadata and codes


def _metadata(*topics: tuple[str, int, list[int], bool]) -> MetadataResponse:
    r = MetadataResponse
    return r(version=12, throttle_time_ms=0, cluster_id="c", controller_id=1,
             brokers=[r.MetadataResponseBroker(node_id=1, host="h", port=9092, rack=None)],
             topics=[r.MetadataResponseTopic(
                 error_code=code, name=name, is_internal=internal,
                 topic_id=uuid.UUID(int=7) if not code else uuid.UUID(int=0),
                 partitions=[r.MetadataResponseTopic.MetadataResponsePartition(
                     error_code=0, partition_index=p, leader_id=1, leader_epoch=0,
                     replica_nodes=[1], isr_nodes=[1], offline_replicas=[]) for p in parts])
                 for name, code, parts, internal in topics])


def test_parse_metadata_keeps_dense_topics_and_reports_the_rest():
    snap = parse_metadata(_metadata(("ok", 0, [1, 0], False), ("gone", 3, [], False),
                                    ("holes", 0, [0, 2], False), ("__x", 0, [0], True)))
    assert sorted(snap.topics) == ["__x", "ok"]
    assert [p.partition for p in snap.topics["ok"].partitions] == [0, 1]
    assert snap.topic_errors == {"gone": 3, "holes": 5}
    assert snap.internal == frozenset({"__x"})
    assert snap.brokers[1].port == 9092 and snap.controller_id == 1
    assert snap.topics["ok"].topic_id == topic_id_string(uuid.UUID(int=7)) != ""


@pytest.mark.parametrize(("message", "key"), [
    ("Invalid value 'forever' for configuration retention.ms: expected a long", "retention.ms"),
    ("Unknown topic config name: no.such.config", "no.such.config"),
    ("Invalid config value for resource ConfigResource: segment.bytes", "segment.bytes"),
    (None, None),
])
def test_config_key_is_found_in_broker_messages(message, key):
    assert config_key_from_message(message, ["segment.bytes", "retention.ms"]) == key


def test_kafka_error_carries_the_broker_message_and_key():
    error = kafka_error(40, "creating topic 't'",
                        "Invalid value -5 for configuration retention.ms: too small")
    assert isinstance(error, be.InvalidConfigError) and error.key == "retention.ms"
    assert "too small" in str(error)
    moved = kafka_error(6, "producing")
    assert isinstance(moved, be.RetriableError)
    assert type(kafka_error(9999, "x")) is be.BackendError


@settings(max_examples=50, deadline=None)
@given(tags=st.lists(st.binary(max_size=200), max_size=4))
def test_tagged_fields_are_skipped(tags):
    def uvarint(n: int) -> bytes:
        out = bytearray()
        while True:
            if n < 0x80:
                return bytes(out + bytes([n]))
            out.append((n & 0x7F) | 0x80)
            n >>= 7

    section = uvarint(len(tags)) + b"".join(uvarint(i) + uvarint(len(t)) + t
                                             for i, t in enumerate(tags))
    assert _skip_tagged_fields(memoryview(section + b"rest"), 0) == len(section)


def test_truncated_tagged_fields_are_a_transport_error():
    with pytest.raises(TransportError):
        _skip_tagged_fields(memoryview(b"\x01\x80"), 0)
