"""DeleteRecords over real frames: per-partition answers, the low watermark, the errors
Kafka's ReplicaManager gives, and ListOffsets/Fetch seeing the new start at once."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient, fetch_request, fill
from kafka.protocol.admin import DeleteRecordsRequest
from kafka.protocol.consumer import ListOffsetsRequest

from core.protocol.errors import ErrorCode

_T = DeleteRecordsRequest.DeleteRecordsTopic
_P = _T.DeleteRecordsPartition


def delete_records(client: WireClient, version: int, **wanted: list[tuple[int, int]]) -> dict:
    request = DeleteRecordsRequest(timeout_ms=1000, topics=[
        _T(name=name, partitions=[_P(partition_index=p, offset=o) for p, o in parts])
        for name, parts in wanted.items()])
    response = client.call(request, version)
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark)
            for t in response.topics for p in t.partitions}


def earliest(client: WireClient, topic: str, partition: int) -> int:
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=partition, current_leader_epoch=-1, timestamp=-2)])])
    return client.call(request, 7).topics[0].partitions[0].offset


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_answers_each_partition(broker: InProcessBroker, client: WireClient,
                                               version: int) -> None:
    fill(client, "t", 0, 3, 2)  # offsets 0-5
    fill(client, "t", 1, 1, 2)  # offsets 0-1
    answers = delete_records(client, version, t=[(0, 3), (1, 5), (7, 0)],
                             missing=[(0, 0)])
    assert answers == {
        ("t", 0): (ErrorCode.NONE, 3),
        ("t", 1): (ErrorCode.OFFSET_OUT_OF_RANGE, -1),
        ("t", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("missing", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    }
    assert earliest(client, "t", 0) == 3
    fetched = client.call(fetch_request([("t", 0, 1, 1 << 20)]), 11)
    part = fetched.responses[0].partitions[0]
    assert (part.error_code, part.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, 3)
    # -1 is the high watermark.
    assert delete_records(client, version, t=[(1, -1)]) == {("t", 1): (ErrorCode.NONE, 2)}


def test_delete_records_refuses_compacted_and_internal_topics(broker: InProcessBroker,
                                                              client: WireClient) -> None:
    broker.manager.create_topic("c", 1, {"cleanup.policy": "compact"})
    answers = delete_records(client, 2, c=[(0, 0)], __consumer_offsets=[(0, 0)])
    assert answers == {("c", 0): (ErrorCode.POLICY_VIOLATION, -1),
                       ("__consumer_offsets", 0): (ErrorCode.POLICY_VIOLATION, -1)}
