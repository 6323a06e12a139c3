"""Produce over real frames (in-process broker): offsets, validation, acks, idempotence."""

from __future__ import annotations

import struct
import threading
from typing import Any

import pytest
from broker_harness import (
    InProcessBroker,
    WireClient,
    fetch_request,
    produce,
    produce_request,
    records,
)
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import InitProducerIdRequest

from core.log.records import crc32c, encode_batch, set_base_offset
from core.protocol.errors import ErrorCode


@pytest.mark.parametrize("version", [3, 5, 7, 8, 9])
def test_produce_assigns_offsets_and_stores_the_batch_unchanged(
        broker: InProcessBroker, client: WireClient, version: int) -> None:
    for compression in (0, 1, 2, 3, 4):
        batch = encode_batch(records(3), compression=compression)
        result = produce(client, "t", 0, bytes(batch), version=version)
        assert result.error_code == 0
        base = result.base_offset
        assert base == broker.manager.log("t", 0).log_end_offset - 3
        if version >= 5:
            assert result.log_start_offset == 0
        assert result.log_append_time_ms == -1
        stored = broker.manager.log("t", 0).read(base, 1 << 20).data
        expected = bytearray(batch)
        set_base_offset(expected, base)
        expected[12:16] = b"\x00\x00\x00\x00"  # leader epoch 0, stamped like Kafka does
        assert stored[: len(expected)] == expected


def corrupt(batch: bytearray) -> bytes:
    batch[-1] ^= 0xFF
    return bytes(batch)


@pytest.mark.parametrize(("make", "code"), [
    (lambda: corrupt(encode_batch(records())), ErrorCode.CORRUPT_MESSAGE),
    (lambda: bytes(encode_batch(records()))[:-5], ErrorCode.CORRUPT_MESSAGE),
    (lambda: b"\x00" * 30, ErrorCode.CORRUPT_MESSAGE),
    (lambda: bytes(encode_batch(records(), base_offset=7)), ErrorCode.INVALID_RECORD),
    (lambda: bytes(encode_batch(records()) * 2), ErrorCode.INVALID_RECORD),
    (lambda: None, ErrorCode.INVALID_RECORD),
    (lambda: b"", ErrorCode.INVALID_RECORD),
])
def test_produce_rejects_bad_batches_and_stores_nothing(
        broker: InProcessBroker, client: WireClient, make: Any, code: ErrorCode) -> None:
    result = produce(client, "t", 0, make())
    assert (result.error_code, result.base_offset) == (code, -1)
    assert result.error_message
    assert broker.manager.log("t", 0).log_end_offset == 0


def test_produce_rejects_control_and_transactional_batches(client: WireClient) -> None:
    for bit, code in ((0x20, ErrorCode.INVALID_RECORD), (0x10, ErrorCode.INVALID_TXN_STATE)):
        batch = encode_batch(records())
        attributes = struct.unpack_from(">h", batch, 21)[0] | bit
        struct.pack_into(">h", batch, 21, attributes)
        struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
        assert produce(client, "t", 0, bytes(batch)).error_code == code


def test_produce_topic_level_errors(broker: InProcessBroker, client: WireClient) -> None:
    broker.manager.create_topic("small", 1, {"max.message.bytes": "200"})
    broker.manager.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    broker.manager.create_topic("safe", 1, {"min.insync.replicas": "2"})
    good = bytes(encode_batch(records()))
    assert produce(client, "small", 0, bytes(encode_batch(records(20)))).error_code == \
        ErrorCode.MESSAGE_TOO_LARGE
    assert produce(client, "t", 5, good).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(client, "nope", 0, good).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(client, "compacted", 0, bytes(encode_batch(records(key=None)))
                   ).error_code == ErrorCode.INVALID_RECORD
    assert produce(client, "compacted", 0, good).error_code == 0
    assert produce(client, "safe", 0, good, acks=-1).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce(client, "safe", 0, good, acks=1).error_code == 0
    assert produce(client, "t", 0, good, acks=2).error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert produce(client, "__consumer_offsets", 0, good).error_code == \
        ErrorCode.INVALID_TOPIC_EXCEPTION


def test_log_append_time_topics_report_the_stamp(broker: InProcessBroker,
                                                 client: WireClient) -> None:
    broker.manager.create_topic("stamped", 1, {"message.timestamp.type": "LogAppendTime"})
    result = produce(client, "stamped", 0, bytes(encode_batch(records())))
    assert result.error_code == 0 and result.log_append_time_ms > 1_700_000_000_000


def test_acks_0_is_not_answered_and_a_failure_closes_the_connection(
        broker: InProcessBroker, client: WireClient) -> None:
    client.send(produce_request("t", 0, bytes(encode_batch(records())), acks=0), 7)
    # The next answer on the connection belongs to the next request.
    versions = ApiVersionsRequest()
    assert client.receive(versions, client.send(versions, 0)).error_code == 0
    assert broker.manager.log("t", 0).log_end_offset == 3
    client.send(produce_request("nope", 0, bytes(encode_batch(records())), acks=0), 7)
    assert client.closed_by_peer()


def test_idempotent_retries_are_answered_with_the_original_offsets(
        broker: InProcessBroker, client: WireClient) -> None:
    init = client.call(InitProducerIdRequest(transactional_id=None,
                                             transaction_timeout_ms=1000), 4)
    pid, epoch = init.producer_id, init.producer_epoch
    assert (init.error_code, epoch) == (0, 0)
    first = bytes(encode_batch(records(2), producer_id=pid, producer_epoch=0, base_sequence=0))
    second = bytes(encode_batch(records(2), producer_id=pid, producer_epoch=0, base_sequence=2))
    assert produce(client, "t", 1, first).base_offset == 0
    assert produce(client, "t", 1, second).base_offset == 2
    retried = produce(client, "t", 1, first)
    assert (retried.error_code, retried.base_offset) == (0, 0)
    gap = bytes(encode_batch(records(1), producer_id=pid, producer_epoch=0, base_sequence=9))
    assert produce(client, "t", 1, gap).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert broker.manager.log("t", 1).log_end_offset == 4


def test_appends_that_fsync_run_off_the_event_loop_and_wake_long_polls(
        broker: InProcessBroker, client: WireClient) -> None:
    broker.manager.create_topic("durable", 1, {"flush.messages": "1"})
    threads: list[str] = []
    broker.manager.log("durable", 0).add_append_listener(
        lambda _end: threads.append(threading.current_thread().name))
    consumer = broker.client()
    try:
        pending = fetch_request([("durable", 0, 0, 1 << 20)], max_wait_ms=60_000, min_bytes=1)
        correlation = consumer.send(pending, 11)
        assert produce(client, "durable", 0, bytes(encode_batch(records()))).error_code == 0
        response = consumer.receive(pending, correlation)  # woken by the append, not a timeout
        assert response.responses[0].partitions[0].records
    finally:
        consumer.close()
    assert threads and all(name.startswith("ferry-append") for name in threads)
    assert broker.manager.log("durable", 0).flushed_offset == 3
