"""ListOffsets (key 2, v1-7): offsets by position or by timestamp, per partition.

Timestamp -2 is the log start offset, -1 the high watermark (the log end, on one node),
-3 (v7, KIP-734) the record with the largest timestamp; a timestamp >= 0 finds the first
record at or after it. Nothing found is offset -1 with timestamp -1, as Kafka answers.
The isolation level changes nothing: without transactions the last stable offset is the
high watermark.
"""

from __future__ import annotations

import logging

from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from core.broker.handlers.metadata import LEADER_EPOCH
from core.broker.registry import handles
from core.broker.replication.manager import ReplicationError
from core.broker.security.access import AclOperation, ResourceType, allowed_names
from core.broker.state import BrokerState, RequestContext
from core.log.errors import LogClosedError, StorageError, UnknownTopicError
from core.log.log import PartitionLog
from core.protocol.errors import ErrorCode

__all__ = ["list_offsets"]

log = logging.getLogger(__name__)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3

_TopicResponse = ListOffsetsResponse.ListOffsetsTopicResponse
_PartitionResponse = _TopicResponse.ListOffsetsPartitionResponse


@handles(ListOffsetsRequest, versions=(1, 7))
async def list_offsets(state: BrokerState, ctx: RequestContext) -> ListOffsetsResponse:
    topics = []
    describable = allowed_names(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                {t.name for t in ctx.request.topics})
    for topic in ctx.request.topics:
        partitions = []
        for p in topic.partitions:
            if topic.name not in describable:
                code, offset, timestamp, epoch = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1
            elif state.replicas is not None:
                code, offset, timestamp, epoch = _lookup_leader(
                    state, topic.name, p.partition_index, p.timestamp,
                    p.current_leader_epoch if ctx.api_version >= 4 else -1, ctx.api_version)
            else:
                code, offset, timestamp = _lookup(state, topic.name, p.partition_index,
                                                  p.timestamp, p.current_leader_epoch,
                                                  ctx.api_version)
                epoch = LEADER_EPOCH
            partitions.append(_PartitionResponse(
                partition_index=p.partition_index, error_code=code, timestamp=timestamp,
                offset=offset, leader_epoch=epoch if code == ErrorCode.NONE else -1))
        topics.append(_TopicResponse(name=topic.name, partitions=partitions))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _lookup(state: BrokerState, topic: str, partition: int, timestamp: int,
            leader_epoch: int, version: int) -> tuple[ErrorCode, int, int]:
    """(error, offset, timestamp) for one partition."""
    try:
        plog = state.manager.log(topic, partition)
    except UnknownTopicError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
    if version >= 4 and leader_epoch > LEADER_EPOCH:
        return ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1
    try:
        return _offset(plog, timestamp, version)
    except LogClosedError:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1
    except StorageError as exc:
        log.error("cannot look up offsets of %s-%d: %s", topic, partition, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR, -1, -1


def _lookup_leader(state: BrokerState, topic: str, partition: int, timestamp: int,
                   leader_epoch: int, version: int) -> tuple[ErrorCode, int, int, int]:
    """In a cluster only the leader answers, and the latest offset is the high watermark
    (what consumers can read), as in Kafka."""
    assert state.replicas is not None
    try:
        replica = state.replicas.leader_replica(topic, partition, leader_epoch)
    except ReplicationError as exc:
        return exc.code, -1, -1, -1
    epoch = replica.spec.leader_epoch
    if timestamp == LATEST:
        return ErrorCode.NONE, replica.high_watermark, -1, epoch
    try:
        code, offset, found = _offset(replica.plog, timestamp, version)
    except StorageError as exc:
        log.error("cannot look up offsets of %s-%d: %s", topic, partition, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR, -1, -1, -1
    if offset > replica.high_watermark:
        return code, -1, -1, epoch
    return code, offset, found, epoch


def _offset(plog: PartitionLog, timestamp: int, version: int) -> tuple[ErrorCode, int, int]:
    if timestamp == LATEST:
        return ErrorCode.NONE, plog.log_end_offset, -1
    if timestamp == EARLIEST:
        return ErrorCode.NONE, plog.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP and version >= 7:
        found = plog.max_timestamp()
    elif timestamp >= 0:
        found = plog.offset_for_timestamp(timestamp)
    else:  # -4 and -5 (local and tiered storage) need v8+, which is not served
        return ErrorCode.INVALID_REQUEST, -1, -1
    if found is None:
        return ErrorCode.NONE, -1, -1
    offset, found_timestamp = found
    return ErrorCode.NONE, offset, found_timestamp
