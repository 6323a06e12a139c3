"""Produce over real frames: KIP-467 per-record errors name the refused records of a batch."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient, produce

from core.log.records import encode_batch
from core.protocol.errors import ErrorCode


@pytest.mark.parametrize("version", [7, 8, 9])
def test_records_without_keys_on_a_compacted_topic_are_named(
        broker: InProcessBroker, client: WireClient, version: int) -> None:
    broker.manager.create_topic("table", 1, {"cleanup.policy": "compact"})
    batch = encode_batch([(b"a", b"1", [], 1), (None, b"2", [], 1), (b"c", b"3", [], 1),
                          (None, b"4", [], 1)])
    result = produce(client, "table", 0, bytes(batch), version=version)
    assert (result.error_code, result.base_offset) == (ErrorCode.INVALID_RECORD, -1)
    if version >= 8:
        assert [e.batch_index for e in result.record_errors] == [1, 3]
        assert "without key" in result.record_errors[0].batch_index_error_message
        assert result.error_message.startswith(
            "One or more records have been rejected due to 2 record errors in total")
    assert broker.manager.log("table", 0).log_end_offset == 0
    keyed = produce(client, "table", 0, bytes(encode_batch([(b"a", b"1", [], 1)])),
                    version=version)
    assert (keyed.error_code, keyed.base_offset, keyed.record_errors) == (0, 0, [])


def test_a_batch_level_error_names_no_record(client: WireClient) -> None:
    result = produce(client, "t", 0, bytes(encode_batch([(b"k", b"v", [], 1)], base_offset=3)))
    assert result.error_code == ErrorCode.INVALID_RECORD
    assert result.record_errors == [] and result.error_message
