"""OffsetForLeaderEpoch (key 23, v0-4): where a leader epoch ends in the leader's log
(KIP-101, KIP-320), so that a consumer whose leader changed can tell whether its position
was truncated away.

Per partition the answer is the largest epoch not above the asked one that the leader
knows, and the offset where it ended (the start of the next epoch, or the log end for the
latest), or UNDEFINED (-1, -1) for an epoch older than every one the log holds. In a
cluster only the leader answers, after the ``current_leader_epoch`` check
(FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER); a single node leads
everything at epoch 0 from offset 0. Followers do not need this request: Fetch v12's
diverging epoch tells them where to truncate.
"""

from __future__ import annotations

from kafka.protocol.consumer import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from core.broker.handlers.metadata import LEADER_EPOCH
from core.broker.registry import handles
from core.broker.replication.leader_epoch import UNDEFINED, EpochEntry, LeaderEpochCache
from core.broker.replication.manager import ReplicationError
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    allowed_names,
    cluster_allowed,
)
from core.broker.state import BrokerState, RequestContext
from core.log.errors import LogClosedError, UnknownTopicError
from core.protocol.errors import ErrorCode

__all__ = ["offset_for_leader_epoch"]

_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Partition = _Topic.EpochEndOffset
#: A single node's epochs: epoch 0 from the first offset.
_SINGLE_NODE = LeaderEpochCache([EpochEntry(LEADER_EPOCH, 0)])


@handles(OffsetForLeaderEpochRequest, versions=(0, 4))
async def offset_for_leader_epoch(state: BrokerState, ctx: RequestContext) -> object:
    version = ctx.api_version
    names = [t.topic for t in ctx.request.topics]
    # As Kafka: a follower (replica id >= 0, v3+) needs CLUSTER_ACTION, a consumer DESCRIBE
    # on each topic; the others answer TOPIC_AUTHORIZATION_FAILED.
    replica_id = ctx.request.replica_id if version >= 3 else -1
    if replica_id >= 0:
        permitted = (set(names) if cluster_allowed(state, ctx, AclOperation.CLUSTER_ACTION)
                     else set())
    else:
        permitted = allowed_names(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                  names)
    topics = []
    for topic in ctx.request.topics:
        partitions = []
        for p in topic.partitions:
            current = p.current_leader_epoch if version >= 2 else -1
            code, epoch, end = (
                _end_of(state, topic.topic, p.partition, current, p.leader_epoch)
                if topic.topic in permitted
                else (ErrorCode.TOPIC_AUTHORIZATION_FAILED, UNDEFINED, UNDEFINED))
            partitions.append(_Partition(version=version, error_code=code,
                                         partition=p.partition, leader_epoch=epoch,
                                         end_offset=end))
        topics.append(_Topic(version=version, topic=topic.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=topics)


def _end_of(state: BrokerState, topic: str, partition: int, current_leader_epoch: int,
            leader_epoch: int) -> tuple[ErrorCode, int, int]:
    try:
        if state.replicas is not None:
            replica = state.replicas.leader_replica(topic, partition, current_leader_epoch)
            epochs, end = replica.epochs, replica.plog.log_end_offset
        else:
            if current_leader_epoch > LEADER_EPOCH:
                return ErrorCode.UNKNOWN_LEADER_EPOCH, UNDEFINED, UNDEFINED
            epochs, end = _SINGLE_NODE, state.manager.log(topic, partition).log_end_offset
    except ReplicationError as exc:
        return exc.code, UNDEFINED, UNDEFINED
    except UnknownTopicError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNDEFINED, UNDEFINED
    except LogClosedError:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, UNDEFINED, UNDEFINED
    epoch, end_offset = epochs.end_offset_for(leader_epoch, end)
    return ErrorCode.NONE, epoch, end_offset
