"""ListOffsets over real frames: earliest, latest, max timestamp, by timestamp."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient, fill
from kafka.protocol.consumer import ListOffsetsRequest

from core.protocol.errors import ErrorCode

_LT = ListOffsetsRequest.ListOffsetsTopic


@pytest.mark.parametrize("version", [1, 4, 7])
def test_list_offsets(broker: InProcessBroker, client: WireClient, version: int) -> None:
    fill(client, "t", 0, 2, 3)  # timestamps 1_700_000_000_000 + 0..2, then + 1..3

    def lookup(timestamp: int, partition: int = 0) -> tuple[int, int, int]:
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[_LT(
            name="t", partitions=[_LT.ListOffsetsPartition(partition_index=partition,
                                                           current_leader_epoch=-1,
                                                           timestamp=timestamp)])])
        p = client.call(request, version).topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    assert lookup(-2) == (0, 0, -1)
    assert lookup(-1) == (0, 6, -1)
    assert lookup(1_700_000_000_001) == (0, 1, 1_700_000_000_001)
    assert lookup(1_800_000_000_000) == (0, -1, -1)
    assert lookup(-1, partition=9)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if version >= 7:
        assert lookup(-3) == (0, 5, 1_700_000_000_003)
