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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka.protocol.consumer import FetchRequest

from core.broker.handlers.metadata import LEADER_EPOCH
from core.broker.registry import handles
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
        if state.metrics is None:
            await state.append_waiters.wait(list(ends), remaining, ready=_moved(ends))
            continue
        state.metrics.fetch_purgatory += 1
        try:
            await state.append_waiters.wait(list(ends), remaining, ready=_moved(ends))
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
            try:
                plog = state.manager.log(topic.topic, p.partition)
            except UnknownTopicError:
                out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                answer_now = True
                continue
            if version >= 9 and p.current_leader_epoch > LEADER_EPOCH:
                out.error_code = ErrorCode.UNKNOWN_LEADER_EPOCH
                answer_now = True
                continue
            limit = min(p.partition_max_bytes, remaining)
            first = total == 0  # KIP-74: only the first data may exceed the limits
            try:
                if limit > 0 or first:
                    result = plog.read(p.fetch_offset, max(limit, 1))
                    data, hw, start = result.data, result.high_watermark, result.log_start_offset
                else:  # the response is full: only the partition's bounds
                    data, hw, start = b"", *_bounds(plog, p.fetch_offset)
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
            ends[plog] = hw
        topics.append((topic.topic, partitions))
    return topics, total, answer_now, ends


def _moved(ends: dict[PartitionLog, int]) -> Callable[[], bool]:
    """Whether any of the partitions grew since it was read."""
    return lambda: any(plog.log_end_offset != end for plog, end in ends.items())


def _bounds(plog: PartitionLog, offset: int) -> tuple[int, int]:
    """(high watermark, log start offset), after the range check a read would make."""
    start, end = plog.log_start_offset, plog.log_end_offset
    if not start <= offset <= end:
        raise OffsetOutOfRangeError(f"offset {offset} is outside [{start}, {end}]",
                                    log_start_offset=start, log_end_offset=end)
    return end, start
