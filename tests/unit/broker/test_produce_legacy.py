"""Produce v0-2 over real frames: message sets of formats v0 and v1 (as clients from
before Kafka 0.11 send them) are stored as RecordBatch v2, keys, values, CreateTimes and
compression kept; broken ones are refused without closing the connection."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient, produce
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from core.log.records import decode_batch, encode_batch
from core.protocol.errors import ErrorCode


def message_set(magic: int, compression: int = 0, count: int = 3) -> bytes:
    builder = MemoryRecordsBuilder(magic=magic, compression_type=compression,
                                   batch_size=1 << 20)
    for i in range(count):
        builder.append(timestamp=1_700_000_000_000 + i if magic else None,
                       key=b"k%d" % i if i else None, value=b"v%d" % i, headers=[])
    builder.close()
    return bytes(builder.buffer())


@pytest.mark.parametrize(("version", "magic", "compression"),
                         [(0, 0, 0), (1, 0, 1), (2, 1, 0), (2, 1, 2), (2, 0, 0)])
def test_old_message_formats_are_stored_as_record_batches(
        broker: InProcessBroker, client: WireClient, version: int, magic: int,
        compression: int) -> None:
    result = produce(client, "t", 0, message_set(magic, compression), version=version)
    assert (result.error_code, result.base_offset) == (ErrorCode.NONE, 0)
    header, records = decode_batch(broker.manager.log("t", 0).read(0, 1 << 20).data)
    assert header.compression == compression
    assert [(r.offset, r.key, r.value) for r in records] == [
        (0, None, b"v0"), (1, b"k1", b"v1"), (2, b"k2", b"v2")]
    if magic == 1:
        assert [r.timestamp for r in records] == [1_700_000_000_000 + i for i in range(3)]
    again = produce(client, "t", 0, message_set(magic, compression), version=version)
    assert again.base_offset == 3


@pytest.mark.parametrize(("data", "code"), [
    (lambda: message_set(1)[:-4], ErrorCode.CORRUPT_MESSAGE),
    (lambda: bytes(bytearray(message_set(1))[:-1] + b"!"), ErrorCode.CORRUPT_MESSAGE),
    (lambda: bytes(encode_batch([(b"k", b"v", [], 1)])), ErrorCode.INVALID_RECORD),
])
def test_broken_old_message_sets_are_refused(broker: InProcessBroker, client: WireClient,
                                             data, code: int) -> None:
    assert produce(client, "t", 0, data(), version=2).error_code == code
    assert broker.manager.log("t", 0).log_end_offset == 0
    # The connection stays usable.
    assert produce(client, "t", 0, message_set(1), version=2).error_code == ErrorCode.NONE


def test_api_versions_advertises_the_versions_read(client: WireClient) -> None:
    response = client.call(ApiVersionsRequest(client_software_name="t",
                                              client_software_version="1"), 3)
    produce_range = next((k.min_version, k.max_version) for k in response.api_keys
                         if k.api_key == 0)
    assert produce_range == (0, 9)
