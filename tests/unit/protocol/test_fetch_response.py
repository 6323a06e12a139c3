"""The hand-written Fetch response encoder is byte-identical to kafka-python's."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer import FetchResponse

from core.protocol.fetch_response import FetchPartitionData, encode_fetch_response

_T = FetchResponse.FetchableTopicResponse
_P = _T.PartitionData


def reference(version: int, topics: list[tuple[str, list[FetchPartitionData]]],
              error_code: int) -> bytes:
    return bytes(FetchResponse(throttle_time_ms=0, error_code=error_code, session_id=0,
                               responses=[_T(topic=name, partitions=[
                                   _P(partition_index=p.partition, error_code=p.error_code,
                                      high_watermark=p.high_watermark,
                                      last_stable_offset=p.last_stable_offset,
                                      log_start_offset=p.log_start_offset,
                                      aborted_transactions=None if p.aborted_transactions_null
                                      else [],
                                      preferred_read_replica=p.preferred_read_replica,
                                      records=None if p.records is None else bytes(p.records))
                                   for p in parts]) for name, parts in topics]
                               ).encode(version=version))


@pytest.mark.parametrize("version", range(4, 13))
@pytest.mark.parametrize("null_aborted", [True, False])
def test_byte_identical_to_kafka_python(version: int, null_aborted: bool) -> None:
    batch = memoryview(bytes(range(256)) * 10)
    topics = [
        ("orders", [FetchPartitionData(0, 0, 100, 100, 3, batch, null_aborted),
                    FetchPartitionData(1, 1, 50, 50, 0, b"", null_aborted),
                    FetchPartitionData(2, 3, -1, -1, -1, None, null_aborted)]),
        ("ünïcode-" + "x" * 200, [FetchPartitionData(7, 0, 1, 1, 0, b"abc", null_aborted)]),
        ("empty", []),
    ]
    chunks = encode_fetch_response(version, topics, error_code=0)
    assert b"".join(chunks) == reference(version, topics, 0)
    assert any(c is batch for c in chunks), "record bytes are passed through, not copied"


def test_top_level_error_and_unsupported_versions() -> None:
    assert b"".join(encode_fetch_response(11, [], error_code=70)) == reference(11, [], 70)
    with pytest.raises(ValueError):
        encode_fetch_response(13, [])
