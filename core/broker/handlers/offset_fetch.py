"""OffsetFetch (key 9) v1-7: a group's committed offsets; all of them when topics is null."""

from __future__ import annotations

from collections.abc import Iterable

from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed, allowed_names
from core.broker.state import BrokerState, RequestContext
from core.group import CommittedOffset, CoordinatorError, TopicPartitionKey
from core.protocol.errors import ErrorCode

__all__ = ["handle_offset_fetch"]

_Topic = OffsetFetchResponse.OffsetFetchResponseTopic
_Partition = _Topic.OffsetFetchResponsePartition

#: What a partition without a committed offset reports (Kafka's INVALID_OFFSET).
NO_OFFSET = -1


@handles(OffsetFetchRequest, versions=(1, 7))
async def handle_offset_fetch(state: BrokerState, ctx: RequestContext) -> OffsetFetchResponse:
    req = ctx.request
    version = ctx.api_version
    # v7's require_stable is accepted and has nothing to wait for: without transactions
    # no offset is ever pending.
    wanted: list[TopicPartitionKey] | None = None
    if not allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.GROUP, req.group_id):
        denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
        if version >= 2:
            return OffsetFetchResponse(version=version, throttle_time_ms=0,
                                       error_code=denied, topics=[])
        return _response(version, [(t.name, p) for t in req.topics for p in t.partition_indexes],
                         {}, denied)
    if req.topics is not None:
        wanted = [(t.name, p) for t in req.topics for p in t.partition_indexes]
    try:
        committed = state.coordinator.fetch_offsets(req.group_id, wanted)
    except CoordinatorError as exc:
        if version >= 2:
            # A top-level error from v2 on, with no partitions (Kafka's getErrorResponse).
            return OffsetFetchResponse(version=version, throttle_time_ms=0,
                                       error_code=exc.error_code, topics=[])
        return _response(version, wanted or [], {}, exc.error_code)
    describable = allowed_names(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                {tp[0] for tp in (wanted if wanted is not None else committed)})
    if wanted is None:
        # Null topics (v2+): every partition the group has committed (that the caller may
        # describe: the others are left out, as Kafka does).
        wanted = sorted(tp for tp in committed if tp[0] in describable)
    response = _response(version, wanted, committed, ErrorCode.NONE)
    for topic in response.topics:
        if topic.name not in describable:
            for p in topic.partitions:
                p.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                p.committed_offset, p.committed_leader_epoch, p.metadata = NO_OFFSET, -1, ""
    return response


def _response(version: int, partitions: Iterable[TopicPartitionKey],
              committed: dict[TopicPartitionKey, CommittedOffset],
              partition_error: int) -> OffsetFetchResponse:
    by_topic: dict[str, list] = {}
    for tp in partitions:
        c = committed.get(tp)
        by_topic.setdefault(tp[0], []).append(_Partition(
            version=version, partition_index=tp[1],
            committed_offset=c.offset if c is not None else NO_OFFSET,
            committed_leader_epoch=c.leader_epoch if c is not None else -1,
            metadata=c.metadata if c is not None else "",
            error_code=int(partition_error)))
    return OffsetFetchResponse(
        version=version, throttle_time_ms=0, error_code=ErrorCode.NONE,
        topics=[_Topic(version=version, name=name, partitions=parts)
                for name, parts in by_topic.items()])
