"""Fetch (key 1, v4-12): stored batches from an offset, with long polling.

Sessionless (KIP-227 lets a broker decline sessions): every response is a full one with
session id 0 and every requested partition, which clients then keep requesting in full.
Limits follow KIP-74: ``partition_max_bytes`` per partition and ``max_bytes`` overall,
except that the first batch of the first partition with data is returned whatever its
size, so a consumer always progresses. Below ``min_bytes`` the request waits up to
``max_wait_ms`` for an append to one of its partitions; an error in any partition answers
at once. The last stable offset is the high watermark (no transactions), so
read_committed reads the same as read_uncommitted. Record bytes go out as the log returned
them (``core.protocol.fetch_response``).

In a cluster (``state.replicas``) only the leader serves a partition, after checking
``current_leader_epoch``: consumers read up to the high watermark; a follower's fetch
(``replica_id`` >= 0) reads up to the log end, reports the follower's log end for the ISR
and high watermark, or answers only DivergingEpoch when the follower's log left the
leader's. A follower's long poll also ends at an append to a partition it replicates but
did not name yet (``_with_unrequested``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka.protocol.consumer import FetchRequest

from core.broker.handlers.metadata import LEADER_EPOCH
from core.broker.registry import handles
from core.broker.replication.manager import Replica, ReplicationError
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    allowed_names,
    cluster_allowed,
)
from core.broker.state import BrokerState, RequestContext
from core.log.errors import (
    LogClosedError,
    OffsetOutOfRangeError,
    StorageError,
    UnknownTopicError,
)
from core.log.log import PartitionLog
from core.protocol.codec import EncodedResponse
from core.protocol.errors import ErrorCode
from core.protocol.fetch_response import FetchPartitionData, encode_fetch_response

if TYPE_CHECKING:
    from core.broker.metrics import BrokerMetrics

__all__ = ["fetch"]

log = logging.getLogger(__name__)

_MAX_WAIT_S = 300.0  # a longer max_wait_ms is a client bug; cap how long a request hangs


@handles(FetchRequest, versions=(4, 12))
async def fetch(state: BrokerState, ctx: RequestContext) -> EncodedResponse:
    request = ctx.request
    version = ctx.api_version
    if version >= 7 and (request.session_id != 0 or request.session_epoch > 0):
        # This broker never creates a session, so a client cannot name one.
        code = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND if request.session_id != 0
                else ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        return EncodedResponse(encode_fetch_response(version, [], error_code=code))
    deadline = time.monotonic() + min(max(request.max_wait_ms, 0) / 1000, _MAX_WAIT_S)
    denied = _denied(state, ctx)
    while True:
        topics, total, answer_now, ends = _read(state, request, version, denied)
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or answer_now or remaining <= 0 or not ends:
            if state.metrics is not None:
                _count(state.metrics, topics)
            return EncodedResponse(encode_fetch_response(version, topics))
        ends = _with_unrequested(state, request, ends)
        moved = _moved(state, request, ends)
        if state.metrics is None:
            await state.append_waiters.wait(list(ends), remaining, ready=moved)
            continue
        state.metrics.fetch_purgatory += 1
        try:
            await state.append_waiters.wait(list(ends), remaining, ready=moved)
        finally:
            state.metrics.fetch_purgatory -= 1


def _count(metrics: BrokerMetrics, topics: list[tuple[str, list[FetchPartitionData]]]
           ) -> None:
    """BytesOut and fetch requests per topic, once per answered Fetch."""
    for topic, partitions in topics:
        for out in partitions:
            metrics.fetched(topic, len(out.records or b""), out.error_code != ErrorCode.NONE)


def _denied(state: BrokerState, ctx: RequestContext) -> dict[str, ErrorCode]:
    """The requested topics this request may not read, with the error to answer: a
    consumer needs READ on the topic, a follower CLUSTER_ACTION on the cluster."""
    names = {t.topic for t in ctx.request.topics}
    if getattr(ctx.request, "replica_id", -1) >= 0:
        if cluster_allowed(state, ctx, AclOperation.CLUSTER_ACTION):
            return {}
        return dict.fromkeys(names, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    readable = allowed_names(state, ctx, AclOperation.READ, ResourceType.TOPIC, names)
    return dict.fromkeys(names - readable, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _read(state: BrokerState, request: object, version: int, denied: dict[str, ErrorCode]
          ) -> tuple[list[tuple[str, list[FetchPartitionData]]], int, bool,
                     dict[PartitionLog, int]]:
    """One pass over the requested partitions: the response's topics, the bytes found,
    whether an error means answering now, and the log end seen per readable partition."""
    null_aborted = request.isolation_level == 0  # as Kafka: null unless read_committed
    remaining = request.max_bytes
    total = 0
    answer_now = False
    ends: dict[PartitionLog, int] = {}
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            out = FetchPartitionData(p.partition, ErrorCode.NONE, -1, -1, -1,
                                     aborted_transactions_null=null_aborted)
            partitions.append(out)
            if topic.topic in denied:
                out.error_code = denied[topic.topic]
                continue
            replica = None
            try:
                if state.replicas is not None:
                    replica, diverging = _replica(state, request, p, topic.topic, version)
                    if diverging is not None:  # the follower truncates, then fetches again
                        out.diverging_epoch = diverging
                        out.high_watermark = out.last_stable_offset = replica.high_watermark
                        out.log_start_offset = replica.plog.log_start_offset
                        answer_now = True
                        continue
                    plog = replica.plog
                else:
                    plog = state.manager.log(topic.topic, p.partition)
            except UnknownTopicError:
                out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                answer_now = True
                continue
            except ReplicationError as exc:
                out.error_code = exc.code
                answer_now = True
                continue
            if replica is None and version >= 9 and p.current_leader_epoch > LEADER_EPOCH:
                out.error_code = ErrorCode.UNKNOWN_LEADER_EPOCH
                answer_now = True
                continue
            # Consumers read up to the high watermark; followers (and a single node) to the
            # log end.
            max_offset = (replica.high_watermark
                          if replica is not None and request.replica_id < 0 else None)
            limit = min(p.partition_max_bytes, remaining)
            first = total == 0  # KIP-74: only the first data may exceed the limits
            try:
                if limit > 0 or first:
                    result = plog.read(p.fetch_offset, max(limit, 1), max_offset=max_offset)
                    data, hw, start = result.data, result.high_watermark, result.log_start_offset
                else:  # the response is full: only the partition's bounds
                    data, hw, start = b"", *_bounds(plog, p.fetch_offset)
                log_end = hw  # as the read saw it
                if replica is not None:
                    hw = replica.high_watermark
            except OffsetOutOfRangeError as exc:
                out.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                out.high_watermark = out.last_stable_offset = exc.log_end_offset
                out.log_start_offset = exc.log_start_offset
                answer_now = True
                continue
            except LogClosedError:  # deleted meanwhile, or shutting down
                out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                answer_now = True
                continue
            except StorageError as exc:
                log.error("cannot read %s-%d at offset %d: %s", topic.topic, p.partition,
                          p.fetch_offset, exc)
                out.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                answer_now = True
                continue
            if len(data) > limit and not first:
                data = b""  # one batch larger than what is left: the next fetch gets it
            out.high_watermark = out.last_stable_offset = hw
            out.log_start_offset = start
            out.records = data
            total += len(data)
            remaining -= len(data)
            ends[plog] = log_end if max_offset is None else max_offset
        topics.append((topic.topic, partitions))
    return topics, total, answer_now, ends


def _replica(state: BrokerState, request: object, p: object, topic: str, version: int
             ) -> tuple[Replica, tuple[int, int] | None]:
    """In a cluster: the replica this broker leads (a follower's fetch also reports its
    log end, or learns where its log diverged); ReplicationError otherwise."""
    assert state.replicas is not None
    epoch = p.current_leader_epoch if version >= 9 else -1  # type: ignore[attr-defined]
    replica_id = request.replica_id  # type: ignore[attr-defined]
    if replica_id >= 0:
        return state.replicas.follower_fetch(
            topic, p.partition, replica_id, epoch, p.fetch_offset,  # type: ignore[attr-defined]
            p.last_fetched_epoch if version >= 12 else -1)  # type: ignore[attr-defined]
    return state.replicas.leader_replica(topic, p.partition, epoch), None  # type: ignore[attr-defined]


def _with_unrequested(state: BrokerState, request: object, ends: dict[PartitionLog, int]
                      ) -> dict[PartitionLog, int]:
    """A follower's long poll also ends at an append to a partition it replicates here
    but did not name: it learnt of the partition (a new topic, a new leader) after sending
    this fetch, and would otherwise ask for it only after ``replica.fetch.wait.max.ms``."""
    replica_id = getattr(request, "replica_id", -1)
    if state.replicas is None or replica_id < 0:
        return ends
    requested = {(t.topic, p.partition) for t in request.topics  # type: ignore[attr-defined]
                 for p in t.partitions}
    extra = state.replicas.unrequested_logs(replica_id, requested)
    if not extra:
        return ends
    return {**ends, **{plog: plog.log_end_offset for plog in extra}}


def _moved(state: BrokerState, request: object, ends: dict[PartitionLog, int]
           ) -> Callable[[], bool]:
    """Whether any of the partitions grew (for a cluster's consumers: whether its high
    watermark moved) since it was read."""
    replicas = state.replicas
    if replicas is None or request.replica_id >= 0:  # type: ignore[attr-defined]
        return lambda: any(plog.log_end_offset != end for plog, end in ends.items())

    def hw_moved() -> bool:
        for plog, end in ends.items():
            replica = replicas.replicas.get((plog.topic, plog.partition))
            if replica is None or replica.high_watermark != end:
                return True
        return False

    return hw_moved


def _bounds(plog: PartitionLog, offset: int) -> tuple[int, int]:
    """(high watermark, log start offset), after the range check a read would make."""
    start, end = plog.log_start_offset, plog.log_end_offset
    if not start <= offset <= end:
        raise OffsetOutOfRangeError(f"offset {offset} is outside [{start}, {end}]",
                                    log_start_offset=start, log_end_offset=end)
    return end, start
