"""Produce (key 0, v0-9): append one RecordBatch v2 per partition.

Produce v0-2 (clients from before Kafka 0.11) carry message sets of the old formats, which
are converted to one v2 batch first (``core.broker.legacy_records``), as Kafka converts
them on append; everything below then applies to the converted batch.

Batches are stored as the producer compressed them and never decoded (except that
compacted topics check for keys). Per partition, as Kafka's ``LogValidator`` does: exactly
one whole v2 batch, baseOffset 0, not a control batch, record count matching
lastOffsetDelta, within max.message.bytes, valid CRC-32C; then the idempotent producer's
sequence check and the append, which assigns offsets in place and stamps LogAppendTime.
Appends to partitions that fsync run on threads (see ``core.broker.appender``). Records a
batch may not hold (no key on a compacted topic) are named in ``record_errors`` with
INVALID_RECORD and Kafka's summary in ``error_message`` (KIP-467, v8+).

acks=0 is answered with nothing; if a partition failed, the connection is closed so that
the client refreshes its metadata, as Kafka does. acks=-1 is acks=1 on one node (the ISR
is this node), except that min.insync.replicas above 1 cannot be met: NOT_ENOUGH_REPLICAS,
and that with ``ferry.acks.all.fsync`` (the default) it is answered once an fsync covers
the batch. A failed write (disk full, I/O error) answers KAFKA_STORAGE_ERROR, retriable;
the append was rolled back whole (core.log.dir_health).

In a cluster (``state.replicas``) only the partition's leader appends
(NOT_LEADER_OR_FOLLOWER elsewhere), stamping its leader epoch; acks=all checks the ISR
against min.insync.replicas before the append and is answered once the high watermark
passes the batch (``core.broker.replication.manager``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from core.broker.handlers.metadata import LEADER_EPOCH
from core.broker.legacy_records import to_record_batch
from core.broker.producer_state import ProducerStateError
from core.broker.registry import handles
from core.broker.replication.manager import Replica, ReplicationError
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, CloseConnection, RequestContext
from core.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    LogClosedError,
    LogDirOfflineError,
    RecordTooLargeError,
    StorageError,
    UnknownTopicError,
)
from core.log.log import AppendInfo, PartitionLog
from core.log.records import (
    HEADER_SIZE,
    BatchHeader,
    parse_header,
    set_partition_leader_epoch,
    validate_batch,
)
from core.protocol.errors import ErrorCode

__all__ = ["produce"]

log = logging.getLogger(__name__)

_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse
_RecordError = _PartitionResponse.BatchIndexAndErrorMessage


class _Rejected(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


@handles(ProduceRequest, versions=(0, 9))
async def produce(state: BrokerState, ctx: RequestContext) -> ProduceResponse | None:
    request = ctx.request
    acks = request.acks
    topics = []
    waiting: list[tuple[object, PartitionLog, Awaitable[AppendInfo], int]] = []
    failures: list[str] = []
    replicated: list[_LeaderAppend] = []
    metrics = state.metrics
    transactional = getattr(request, "transactional_id", None)
    txn_denied = transactional is not None and not allowed(
        state, ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional)
    for topic_data in request.topic_data:
        partitions = []
        internal = _is_internal(state, topic_data.name)
        writable = allowed(state, ctx, AclOperation.WRITE, ResourceType.TOPIC, topic_data.name)
        for data in topic_data.partition_data:
            response = _PartitionResponse(index=data.index, error_code=ErrorCode.NONE,
                                          base_offset=-1, log_append_time_ms=-1,
                                          log_start_offset=-1, record_errors=[],
                                          error_message=None)
            partitions.append(response)
            try:
                if txn_denied:
                    raise _Rejected(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                    f"not authorized to write as {transactional}")
                if not writable:
                    raise _Rejected(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                    f"not authorized to write to {topic_data.name}")
                if acks not in (-1, 0, 1):
                    raise _Rejected(ErrorCode.INVALID_REQUIRED_ACKS,
                                    f"acks must be -1, 0 or 1, not {acks}")
                if internal:
                    raise _Rejected(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                    f"clients cannot write to the internal topic "
                                    f"{topic_data.name}")
                replica, epoch = None, LEADER_EPOCH
                if state.replicas is not None:  # a cluster: lead it, with enough ISR
                    replica, epoch = state.replicas.check_produce(topic_data.name,
                                                                  data.index, acks)
                    plog = replica.plog
                else:
                    plog = state.manager.log(topic_data.name, data.index)
                records = data.records
                if ctx.api_version < 3 and records:
                    records = to_record_batch(records, int(time.time() * 1000))
                header, batch = _check_batch(plog, records, acks, epoch,
                                             single_node=replica is None)
                appended = (state.appender.append_in_thread(plog, header, batch)
                            if state.appender.fsyncs(plog)
                            else state.appender.append_now(plog, header, batch))
                if state.appender.waits_for_fsync(plog, acks):
                    appended = state.appender.synced(plog, appended)
                if not isinstance(appended, AppendInfo):
                    if replica is not None:
                        replicated.append(entry := _LeaderAppend(response, replica, epoch))
                        appended = _noting(appended, entry)
                    waiting.append((response, plog, appended, len(batch)))
                    continue
                _succeeded(response, plog, appended)
                if replica is not None:
                    replicated.append(_LeaderAppend(response, replica, epoch, appended))
                if metrics is not None:
                    metrics.produced(plog.topic, len(batch),
                                     appended.last_offset - appended.base_offset + 1)
            except Exception as exc:
                _failed(response, topic_data.name, data.index, exc, ctx, failures)
                if metrics is not None:
                    metrics.produce_failed(topic_data.name, len(data.records or b""))
        topics.append(_TopicResponse(name=topic_data.name, partition_responses=partitions))
    if waiting and metrics is not None:
        metrics.produce_purgatory += 1
    try:
        for response, plog, pending, size in waiting:
            try:
                appended = await pending
                _succeeded(response, plog, appended)
                if metrics is not None:
                    metrics.produced(plog.topic, size,
                                     appended.last_offset - appended.base_offset + 1)
            except Exception as exc:
                _failed(response, plog.topic, plog.partition, exc, ctx, failures)
                if metrics is not None:
                    metrics.produce_failed(plog.topic, size)
    finally:
        if waiting and metrics is not None:
            metrics.produce_purgatory -= 1
    if replicated:
        await _replicate(state, ctx, replicated, failures)
    if acks == 0:
        if failures:
            raise CloseConnection(f"acks=0 produce failed: {failures[0]}")
        return None
    return ProduceResponse(responses=topics, throttle_time_ms=0)


async def _replicate(state: BrokerState, ctx: RequestContext,
                     replicated: list[_LeaderAppend], failures: list[str]) -> None:
    """The leader's part after its appends: the high watermark may move (an ISR of one);
    acks=all answers once each batch is below it (Kafka's delayed produce)."""
    assert state.replicas is not None
    replicas = state.replicas
    for done in replicated:
        if done.info is not None and done.response.error_code == ErrorCode.NONE:
            replicas.appended(done.replica)
    if ctx.request.acks != -1:
        return
    timeout_s = max(ctx.request.timeout_ms, 0) / 1000
    for done in replicated:
        response, replica, info = done.response, done.replica, done.info
        if info is None or response.error_code != ErrorCode.NONE:
            continue
        code = await replicas.wait_acks_all(replica, done.leader_epoch, info.last_offset + 1,
                                            timeout_s)
        if code != ErrorCode.NONE:
            response.error_code = code
            response.error_message = (f"the batch at offset {info.base_offset} did not "
                                      f"reach the in-sync replicas: {code.name}")
            response.base_offset = -1
            failures.append(f"{replica.topic}-{replica.partition}: {code.name}")


@dataclass
class _LeaderAppend:
    """A batch this broker appended as its partition's leader (a cluster): the high
    watermark and acks=all are settled on it once ``info`` is known."""

    response: Any
    replica: Replica
    leader_epoch: int
    info: AppendInfo | None = None


async def _noting(pending: Awaitable[AppendInfo], entry: _LeaderAppend) -> AppendInfo:
    """``pending``'s AppendInfo, also kept in ``entry`` for the leader's part."""
    entry.info = info = await pending
    return info


def _is_internal(state: BrokerState, topic: str) -> bool:
    try:
        return state.manager.topic(topic).internal
    except UnknownTopicError:
        return False


def _check_batch(plog: PartitionLog, records: bytes | None, acks: int,
                 leader_epoch: int = LEADER_EPOCH, *, single_node: bool = True
                 ) -> tuple[BatchHeader, bytearray]:
    """The batch's header and a mutable copy of it stamped with ``leader_epoch``, if the
    request's records hold exactly one acceptable batch for ``plog``; _Rejected
    otherwise."""
    config = plog.config
    if single_node and acks == -1 and config.min_insync_replicas > 1:
        raise _Rejected(ErrorCode.NOT_ENOUGH_REPLICAS,
                        f"min.insync.replicas={config.min_insync_replicas} but this "
                        "partition has 1 in-sync replica (a single node)")
    if not records:
        raise _Rejected(ErrorCode.INVALID_RECORD, "the request holds no record batch")
    if len(records) < HEADER_SIZE:
        raise _Rejected(ErrorCode.CORRUPT_MESSAGE,
                        f"{len(records)} bytes cannot hold a record batch header")
    header = parse_header(records)  # InvalidRecordError for a magic other than 2
    if header.size > len(records):
        raise _Rejected(ErrorCode.CORRUPT_MESSAGE,
                        f"record batch of {header.size} bytes is truncated to {len(records)}")
    if header.size < len(records):
        raise _Rejected(ErrorCode.INVALID_RECORD,
                        "a produce request must hold exactly one record batch per partition")
    if header.size > config.max_message_bytes:
        raise RecordTooLargeError(f"record batch of {header.size} bytes exceeds "
                                  f"max.message.bytes={config.max_message_bytes}")
    if header.base_offset != 0:
        raise _Rejected(ErrorCode.INVALID_RECORD,
                        f"a produced batch must have baseOffset 0, not {header.base_offset}")
    if header.is_control:
        raise _Rejected(ErrorCode.INVALID_RECORD, "clients cannot produce control batches")
    if header.is_transactional:
        raise _Rejected(ErrorCode.INVALID_TXN_STATE,
                        "transactions are not supported by this broker")
    if header.records_count != header.last_offset_delta + 1:
        raise _Rejected(ErrorCode.INVALID_RECORD,
                        f"record batch declares {header.records_count} records but offset "
                        f"deltas up to {header.last_offset_delta}")
    if header.producer_id >= 0:
        # The CRC must hold before the sequence check: a corrupt retry is no duplicate.
        # (Other batches are CRC-checked by the append itself.)
        validate_batch(records)
    batch = bytearray(records)
    set_partition_leader_epoch(batch, leader_epoch)  # outside the CRC, as Kafka stamps it
    return header, batch


def _succeeded(response: object, plog: PartitionLog, info: AppendInfo) -> None:
    response.base_offset = info.base_offset  # type: ignore[attr-defined]
    response.log_append_time_ms = info.log_append_time_ms  # type: ignore[attr-defined]
    response.log_start_offset = plog.log_start_offset  # type: ignore[attr-defined]


def _failed(response: object, topic: str, partition: int, exc: Exception,
            ctx: RequestContext, failures: list[str]) -> None:
    code = _error_code(exc, topic, partition, ctx)
    response.error_code = code  # type: ignore[attr-defined]
    response.error_message = str(exc) or None  # type: ignore[attr-defined]
    if isinstance(exc, InvalidRecordError) and exc.record_errors:
        # KIP-467 (v8+): which records of the batch were refused, so that the client fails
        # them with their own message (the batch as a whole is not appended).
        response.record_errors = [  # type: ignore[attr-defined]
            _RecordError(batch_index=index, batch_index_error_message=message)
            for index, message in exc.record_errors]
    failures.append(f"{topic}-{partition}: {code.name}: {exc}")


def _error_code(exc: Exception, topic: str, partition: int, ctx: RequestContext) -> ErrorCode:
    if isinstance(exc, (_Rejected, ReplicationError)):
        return exc.code
    if isinstance(exc, ProducerStateError):
        return exc.error_code
    if isinstance(exc, UnknownTopicError):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if isinstance(exc, RecordTooLargeError):
        return ErrorCode.MESSAGE_TOO_LARGE
    if isinstance(exc, CorruptRecordError):
        return ErrorCode.CORRUPT_MESSAGE
    if isinstance(exc, InvalidRecordError):
        return ErrorCode.INVALID_RECORD
    if isinstance(exc, LogClosedError):  # deleted meanwhile, or shutting down: retry elsewhere
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if isinstance(exc, LogDirOfflineError):  # logged once, when the directory went offline
        log.debug("append to %s-%d refused for %s: %s", topic, partition, ctx.client_host, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR
    if isinstance(exc, StorageError):
        log.error("append to %s-%d failed for %s: %s", topic, partition, ctx.client_host, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR
    raise exc
