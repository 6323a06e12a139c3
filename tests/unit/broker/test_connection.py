"""Connections: in-order answers, per-connection blocking, and failures that close one
connection while the broker keeps serving the others."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import InProcessBroker, WireClient
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

import core.broker.handlers.list_offsets as list_offsets_handler
from core.protocol.errors import ErrorCode

_FT = FetchRequest.FetchTopic
_LT = ListOffsetsRequest.ListOffsetsTopic


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path, {"socket.request.max.bytes": "65536"})
    b.manager.create_topic("t", 1)
    yield b
    b.close()


def still_serves(broker: InProcessBroker) -> bool:
    client = broker.client()
    try:
        return client.call(ApiVersionsRequest(), 0).error_code == 0
    finally:
        client.close()


def test_pipelined_requests_are_answered_in_order(broker: InProcessBroker) -> None:
    client = broker.client()
    requests = [(ApiVersionsRequest(), 0), (MetadataRequest(topics=None), 9),
                (ApiVersionsRequest(), 2), (MetadataRequest(topics=[]), 1)]
    sent = [(r, client.send(r, v)) for r, v in requests]  # all written before any read
    for request, correlation in sent:
        client.receive(request, correlation)  # asserts the correlation id
    client.close()


def test_a_long_poll_blocks_only_its_own_connection(broker: InProcessBroker) -> None:
    waiting, other = broker.client(), broker.client()
    try:
        poll = FetchRequest(replica_id=-1, max_wait_ms=60_000, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1, topics=[
                                _FT(topic="t", partitions=[_FT.FetchPartition(
                                    partition=0, fetch_offset=0, partition_max_bytes=1000)])],
                            forgotten_topics_data=[], rack_id="")
        waiting.send(poll, 11)
        assert other.call(ApiVersionsRequest(), 1).error_code == 0
    finally:
        waiting.close()
        other.close()


@pytest.mark.parametrize(("name", "frame"), [
    ("unknown api key", struct.pack(">ihhih", 10, 999, 0, 1, -1)),
    ("unsupported version", struct.pack(">ihhih", 10, 0, 2, 1, -1)),  # Produce v2
    ("over socket.request.max.bytes", struct.pack(">i", 65537) + b"x" * 100),
    ("negative size", struct.pack(">i", -5)),
    ("truncated body", struct.pack(">ihhihih", 18, 3, 1, 1, -1, 1, 5) + b"ab"),
])
def test_a_bad_frame_closes_its_connection_only(broker: InProcessBroker, name: str,
                                                frame: bytes,
                                                caplog: pytest.LogCaptureFixture) -> None:
    bystander = broker.client()
    offender = broker.client()
    try:
        with caplog.at_level(logging.WARNING, logger="core.broker.connection"):
            offender.send_raw(frame)
            assert offender.closed_by_peer(), name
        peer = f"127.0.0.1:{offender.sock.getsockname()[1]}"
        assert [r.getMessage() for r in caplog.records
                if f"closing connection from {peer}: " in r.getMessage()], "one line names it"
        assert bystander.call(ApiVersionsRequest(), 0).error_code == 0
        assert still_serves(broker)
    finally:
        bystander.close()
        offender.close()


def test_a_failing_handler_closes_its_connection_and_is_logged(
        broker: InProcessBroker, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_args: object) -> tuple[ErrorCode, int, int]:
        raise RuntimeError("bug in a handler")

    monkeypatch.setattr(list_offsets_handler, "_offset", broken)
    client = broker.client()
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[_LT(
        name="t", partitions=[_LT.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    try:
        with caplog.at_level(logging.ERROR, logger="core.broker.connection"):
            client.send(request, 5)
            assert client.closed_by_peer()
        [record] = [r for r in caplog.records if "ListOffsets" in r.getMessage()]
        assert record.exc_info is not None and "bug in a handler" in str(record.exc_info[1])
        assert still_serves(broker)
    finally:
        client.close()


def test_stop_closes_open_connections(tmp_path: Path) -> None:
    broker = InProcessBroker(tmp_path)
    client: WireClient = broker.client()
    try:
        assert client.call(ApiVersionsRequest(), 0).error_code == 0
        broker.close()
        assert client.closed_by_peer()
    finally:
        client.close()


def test_a_large_produce_is_answered_from_the_event_loop(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A Produce of 64 KiB or more is decoded on the worker thread, but its few-byte
    answer is encoded on the event loop: handing it to the worker costs about 4x the
    encoding (docs/benchmarks.md). The encoder is wrapped to see where it runs."""
    from broker_harness import produce

    import core.broker.connection as connection
    from core.log.records import encode_batch

    on_loop: list[bool] = []
    real = connection.encode_response

    def spy(*args, **kwargs):
        on_loop.append(asyncio._get_running_loop() is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(connection, "encode_response", spy)
    broker = InProcessBroker(tmp_path)
    try:
        broker.manager.create_topic("big", 1)
        client = broker.client()
        batch = encode_batch([(None, bytes(1024), [], None) for _ in range(100)])
        assert len(batch) > 100 * 1024
        first = produce(client, "big", 0, bytes(batch))
        second = produce(client, "big", 0, bytes(batch))
        client.close()
    finally:
        broker.close()
    assert (first.error_code, first.base_offset) == (0, 0)
    assert (second.error_code, second.base_offset) == (0, 100)
    assert on_loop == [True, True]
