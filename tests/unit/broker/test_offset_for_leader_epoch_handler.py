"""OffsetForLeaderEpoch over real frames on a single node: epoch 0 ends at the log end, an
older epoch is UNDEFINED, a newer current epoch is UNKNOWN_LEADER_EPOCH."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient, fill
from kafka.protocol.consumer import OffsetForLeaderEpochRequest

from core.protocol.errors import ErrorCode

_T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic


def _ask(client: WireClient, version: int, epoch: int, current: int = -1,
         partition: int = 0) -> tuple[int, int, int]:
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[_T(topic="t", partitions=[
        _T.OffsetForLeaderPartition(partition=partition, current_leader_epoch=current,
                                    leader_epoch=epoch)])])
    p = client.call(request, version).topics[0].partitions[0]
    return p.error_code, getattr(p, "leader_epoch", 0), p.end_offset


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch_on_a_single_node(broker: InProcessBroker, client: WireClient,
                                                  version: int) -> None:
    fill(client, "t", 0, 2, 3)
    assert _ask(client, version, 0) == (ErrorCode.NONE, 0, 6)
    assert _ask(client, version, 5, current=0) == (ErrorCode.NONE, 0, 6)
    assert _ask(client, version, -1) == (ErrorCode.NONE, -1, -1)
    assert _ask(client, version, 0, current=1)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert _ask(client, version, 0, partition=9)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
