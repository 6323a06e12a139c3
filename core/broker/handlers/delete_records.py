"""DeleteRecords (key 21) v0-2: move partitions' log start offsets forward.

Each partition is answered on its own, as Kafka's ReplicaManager does: offset -1 means the
high watermark; an offset past the high watermark (or below -1) is OFFSET_OUT_OF_RANGE;
internal topics and topics whose cleanup.policy lacks ``delete`` are POLICY_VIOLATION. The
answer's low watermark is the new log start offset, which is stored durably first, so it
holds after a restart (``core.log.start_offset``); ListOffsets for the earliest offset and
Fetch below it see it at once. The deletion is complete when answered, so ``timeout_ms``
has nothing to wait for.
"""

from __future__ import annotations

import logging

from kafka.protocol.admin import DeleteRecordsRequest, DeleteRecordsResponse

from core.broker.admin_common import in_thread
from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.log.errors import (
    LogClosedError,
    OffsetOutOfRangeError,
    StorageError,
    UnknownTopicError,
)
from core.protocol.errors import ErrorCode

__all__ = ["handle_delete_records"]

log = logging.getLogger(__name__)

_TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
_PartitionResult = _TopicResult.DeleteRecordsPartitionResult
#: Kafka's DeleteRecordsResponse.INVALID_LOW_WATERMARK, sent with an error.
INVALID_LOW_WATERMARK = -1


@handles(DeleteRecordsRequest, versions=(0, 2))
async def handle_delete_records(state: BrokerState, ctx: RequestContext
                                ) -> DeleteRecordsResponse:
    version = ctx.api_version
    topics = []
    for topic in ctx.request.topics:
        partitions = []
        for p in topic.partitions:
            code, low = await _delete(state, ctx, topic.name, p.partition_index, p.offset)
            partitions.append(_PartitionResult(version=version,
                                               partition_index=p.partition_index,
                                               low_watermark=low, error_code=code))
        topics.append(_TopicResult(version=version, name=topic.name, partitions=partitions))
    return DeleteRecordsResponse(version=version, throttle_time_ms=0, topics=topics)


async def _delete(state: BrokerState, ctx: RequestContext, topic: str, partition: int,
                  offset: int) -> tuple[int, int]:
    """(error code, low watermark) of one partition."""
    if not allowed(state, ctx, AclOperation.DELETE, ResourceType.TOPIC, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, INVALID_LOW_WATERMARK
    try:
        metadata = state.manager.topic(topic)
        plog = state.manager.log(topic, partition)
    except UnknownTopicError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    if metadata.internal:
        log.info("refused DeleteRecords on internal topic %s from %s", topic, ctx.client_host)
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    if not plog.config.delete:
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    try:
        low = await in_thread(state, plog.delete_records, offset)  # fsyncs the checkpoint
    except OffsetOutOfRangeError as exc:
        log.info("DeleteRecords from %s: %s", ctx.client_host, exc)
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    except LogClosedError:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, INVALID_LOW_WATERMARK
    except StorageError as exc:
        log.error("DeleteRecords on %s-%d failed: %s", topic, partition, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR, INVALID_LOW_WATERMARK
    log.info("client %s deleted records of %s-%d below %d", ctx.client_id, topic, partition,
             low)
    return ErrorCode.NONE, low
