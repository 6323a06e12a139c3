"""OffsetCommit (key 8) v2-8: group commits and simple (generation -1) commits."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse

from core.broker.registry import handles
from core.broker.replication.groups import commit_replicated
from core.broker.security.access import AclOperation, ResourceType, allowed, allowed_names
from core.broker.state import BrokerState, RequestContext
from core.group import OffsetCommit, TopicPartitionKey
from core.protocol.errors import ErrorCode

__all__ = ["handle_offset_commit"]

_Topic = OffsetCommitResponse.OffsetCommitResponseTopic
_Partition = _Topic.OffsetCommitResponsePartition


@handles(OffsetCommitRequest, versions=(2, 8))
async def handle_offset_commit(state: BrokerState, ctx: RequestContext) -> OffsetCommitResponse:
    req = ctx.request
    version = ctx.api_version
    offsets: dict[TopicPartitionKey, OffsetCommit] = {}
    # READ on the group, then READ on each topic (Kafka's authorization of OffsetCommit).
    if not allowed(state, ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return _all_failed(req, version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = allowed_names(state, ctx, AclOperation.READ, ResourceType.TOPIC,
                             {t.name for t in req.topics})
    for topic in req.topics:
        if topic.name not in readable:
            continue
        for p in topic.partitions:
            # retention_time_ms (v2-4) is ignored, as Kafka has since 2.1 (KIP-211): offsets
            # expire by offsets.retention.minutes. The coordinator stamps commit times.
            offsets[(topic.name, p.partition_index)] = OffsetCommit(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
                metadata=p.committed_metadata or "")
    # generation -1 with an empty member id is a "simple" commit (manual assignment).
    results = state.coordinator.commit_offsets(
        req.group_id, req.generation_id_or_member_epoch, req.member_id,
        req.group_instance_id if version >= 7 else None, offsets) if offsets else {}
    if state.replicas is not None:  # a cluster: answered once the ISR has the commit
        results = await commit_replicated(state.replicas, req.group_id, results)
    return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=[
        _Topic(version=version, name=topic.name, partitions=[
            _Partition(version=version, partition_index=p.partition_index,
                       error_code=int(results.get((topic.name, p.partition_index),
                                                  ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
            for p in topic.partitions])
        for topic in req.topics])


def _all_failed(req: object, version: int, code: ErrorCode) -> OffsetCommitResponse:
    return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=[
        _Topic(version=version, name=topic.name, partitions=[
            _Partition(version=version, partition_index=p.partition_index, error_code=code)
            for p in topic.partitions])
        for topic in req.topics])  # type: ignore[attr-defined]
