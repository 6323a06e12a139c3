"""Fetch over real frames (in-process broker): bounds, errors, KIP-74 limits, waiting, sessions."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient, fetch_request, fill

from core.log.records import iter_batches
from core.protocol.errors import ErrorCode


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_fetch_returns_stored_batches_with_partition_bounds(
        broker: InProcessBroker, client: WireClient, version: int) -> None:
    fill(client, "t", 0, 3, 2)
    response = client.call(fetch_request([("t", 0, 2, 1 << 20), ("t", 1, 0, 1 << 20),
                                          ("nope", 0, 0, 100)]), version)
    found = {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}
    assert set(found) == {("t", 0), ("t", 1), ("nope", 0)}  # every partition, always
    p0 = found[("t", 0)]
    assert (p0.error_code, p0.high_watermark, p0.last_stable_offset) == (0, 6, 6)
    if version >= 5:
        assert p0.log_start_offset == 0
    assert p0.records == broker.manager.log("t", 0).read(2, 1 << 20).data
    assert [h.base_offset for _, h in iter_batches(p0.records)] == [2, 4]
    assert (found[("t", 1)].error_code, found[("t", 1)].records) == (0, b"")
    assert found[("nope", 0)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_out_of_range_reports_the_bounds(client: WireClient) -> None:
    fill(client, "t", 0, 1, 2)
    response = client.call(fetch_request([("t", 0, 5, 1000)]), 11)
    p = response.responses[0].partitions[0]
    assert (p.error_code, p.high_watermark, p.log_start_offset) == (
        ErrorCode.OFFSET_OUT_OF_RANGE, 2, 0)


def test_fetch_limits_give_the_first_batch_whole_and_nothing_past_the_limits(
        client: WireClient) -> None:
    fill(client, "t", 0, 3, 40)  # batches of well over 100 bytes
    fill(client, "t", 1, 3, 40)
    response = client.call(fetch_request([("t", 0, 0, 100), ("t", 1, 0, 100)]), 11)
    p0, p1 = response.responses[0].partitions
    assert [h.base_offset for _, h in iter_batches(p0.records)] == [0]  # KIP-74
    assert p1.records == b"" and p1.high_watermark == 120
    response = client.call(fetch_request([("t", 0, 0, 1 << 20), ("t", 1, 0, 1 << 20)],
                                         max_bytes=10), 11)
    p0, p1 = response.responses[0].partitions
    assert len(list(iter_batches(p0.records))) == 1 and p1.records == b""


def test_fetch_waits_for_min_bytes_until_max_wait(broker: InProcessBroker,
                                                  client: WireClient) -> None:
    fill(client, "t", 0, 1, 1)
    response = client.call(fetch_request([("t", 0, 0, 1 << 20)], max_wait_ms=50,
                                         min_bytes=1 << 20), 11)
    assert len(list(iter_batches(response.responses[0].partitions[0].records))) == 1


def test_fetch_sessions_are_declined(client: WireClient) -> None:
    response = client.call(fetch_request([("t", 0, 0, 100)], session_epoch=0), 11)
    assert (response.error_code, response.session_id) == (0, 0)
    response = client.call(fetch_request([("t", 0, 0, 100)], session_id=5, session_epoch=1),
                           11)
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
