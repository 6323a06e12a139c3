"""OffsetDelete (key 47) v0: delete committed offsets of a group (DeleteConsumerGroupOffsets)."""

from __future__ import annotations

from kafka.protocol.consumer.group import OffsetDeleteRequest, OffsetDeleteResponse

from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed, allowed_names
from core.broker.state import BrokerState, RequestContext
from core.group import TopicPartitionKey
from core.protocol.errors import ErrorCode

__all__ = ["handle_offset_delete"]

_Topic = OffsetDeleteResponse.OffsetDeleteResponseTopic
_Partition = _Topic.OffsetDeleteResponsePartition


@handles(OffsetDeleteRequest, versions=(0, 0))
async def handle_offset_delete(state: BrokerState, ctx: RequestContext) -> OffsetDeleteResponse:
    req = ctx.request
    if not allowed(state, ctx, AclOperation.DELETE, ResourceType.GROUP, req.group_id):
        return OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                    throttle_time_ms=0, topics=[])
    readable = allowed_names(state, ctx, AclOperation.READ, ResourceType.TOPIC,
                             {t.name for t in req.topics})
    wanted: list[TopicPartitionKey] = [(t.name, p.partition_index) for t in req.topics
                                       for p in t.partitions if t.name in readable]
    denied = [(t.name, p.partition_index) for t in req.topics for p in t.partitions
              if t.name not in readable]
    # Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION; subscribed topics of a live
    # consumer group GROUP_SUBSCRIBED_TO_TOPIC, as Kafka's handleDeleteOffsets.
    group_error, results = state.coordinator.delete_offsets(req.group_id, wanted)
    if group_error:
        # Kafka's getErrorResponse: the top-level error and no topics.
        return OffsetDeleteResponse(error_code=int(group_error), throttle_time_ms=0, topics=[])
    by_topic: dict[str, list[_Partition]] = {}
    results = {**results, **dict.fromkeys(denied, ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
    for topic, partition in wanted + denied:
        by_topic.setdefault(topic, []).append(_Partition(
            partition_index=partition, error_code=int(results[(topic, partition)])))
    return OffsetDeleteResponse(error_code=0, throttle_time_ms=0, topics=[
        _Topic(name=name, partitions=parts) for name, parts in by_topic.items()])
