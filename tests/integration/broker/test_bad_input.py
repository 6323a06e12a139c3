"""Bad input over raw sockets: only the offending connection closes, the broker keeps
serving its other clients, one log line names the client, and nothing reaches the disk."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import ProduceRequest
from kafka_wire import WireClient

from core.log.records import encode_batch

pytestmark = pytest.mark.integration

_PT = ProduceRequest.TopicProduceData
LIMIT = 1 << 20  # socket.request.max.bytes of the broker under test


def produce_frame(records: bytes, *, correlation_id: int = 1) -> bytes:
    request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        _PT(name="t", partition_data=[_PT.PartitionProduceData(index=0, records=records)])])
    request.with_header(correlation_id=correlation_id, client_id="raw")
    return bytes(request.encode(version=7, header=True, framed=True))


def batch(n: int = 5) -> bytes:
    return bytes(encode_batch([(b"k", b"v%d" % i, [], 1_700_000_000_000) for i in range(n)]))


def stored(data_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((data_dir / "t-0").iterdir())}


def bad_frames() -> dict[str, bytes]:
    good = produce_frame(batch())
    # The records field claims more bytes than the frame holds: a body that does not decode.
    records_at = len(good) - len(batch()) - 4
    lying = bytearray(good)
    struct.pack_into(">i", lying, records_at, len(batch()) + 500)
    return {
        "oversized size prefix": struct.pack(">i", LIMIT + 1),
        "negative size prefix": struct.pack(">i", -1),
        "unknown api key": struct.pack(">ihhih", 10, 500, 0, 1, -1),
        "unsupported produce version": struct.pack(">ihhih", 10, 0, 1, 1, -1),
        "garbage": struct.pack(">i", 40) + bytes(range(200, 240)),
        "records longer than the frame": bytes(lying),
        "truncated body": struct.pack(">i", len(good) - 4 - 20) + good[4:-20],
    }


def test_bad_frames_close_only_their_connection(broker_factory) -> None:
    broker = broker_factory({"socket.request.max.bytes": str(LIMIT)})
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("t", 1, 1)])
    finally:
        admin.close()
    bystander = WireClient(broker.port)  # connected throughout, used between the attacks
    first = bystander.call(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1000,
                                          topic_data=[_PT(name="t", partition_data=[
                                              _PT.PartitionProduceData(index=0,
                                                                       records=batch())])]), 7)
    assert first.responses[0].partition_responses[0].error_code == 0
    before = stored(broker.data_dir)
    try:
        for name, frame in bad_frames().items():
            offender = WireClient(broker.port)
            try:
                offender.send_raw(frame)
                assert offender.closed_by_peer(), name
            finally:
                offender.close()
            assert bystander.call(ApiVersionsRequest(), 1).error_code == 0, name
            assert stored(broker.data_dir) == before, name
        # Half a valid Produce frame, then the client goes away: nothing is stored.
        half = WireClient(broker.port)
        half.send_raw(produce_frame(batch(50))[:300])
        half.close()
        assert bystander.call(ApiVersionsRequest(), 2).error_code == 0
        assert stored(broker.data_dir) == before
    finally:
        bystander.close()
    assert broker.proc is not None and broker.proc.poll() is None
    closing = [line for line in broker.output().splitlines()
               if "closing connection from 127.0.0.1:" in line]
    assert len(closing) == len(bad_frames()), closing
    assert "Traceback" not in broker.output()


def test_an_oversized_request_is_refused_before_its_body_is_sent(broker_factory) -> None:
    broker = broker_factory({"socket.request.max.bytes": str(LIMIT)})
    client = WireClient(broker.port)
    try:
        # Only the size prefix of a 1 GiB request: the broker must not wait for the body.
        client.send_raw(struct.pack(">i", 1 << 30))
        assert client.closed_by_peer()
    finally:
        client.close()
