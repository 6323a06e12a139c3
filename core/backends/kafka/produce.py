"""Produce over the Kafka protocol: Kafka's partitioner, one v2 batch per partition, one
ProduceRequest per partition leader.

Why our own Produce requests rather than librdkafka (confluent-kafka's Producer): the
interface hands over a list of records and wants each record's offset back. With
confluent-kafka that costs a Python ``produce()`` call and a delivery callback per record
plus a ``flush()`` per call; here it is one C-encoded batch per partition
(``core.log.records.encode_batch``) and one request per leader. Measured through the
interface (1,000,000 records of 100 bytes, calls of 1,000, one partition, acks=all, a local
``ferry broker`` on the same 2-core VM, median of 3; ``tests/integration/backends/
kafka_throughput.py``): these requests 892k records/s; confluent-kafka ``produce()`` +
callbacks + ``flush()`` 317k/s; ``produce_batch()`` 389k/s. Quiet-machine runs of this
module reach 0.9-1.1M/s; the client then spends its time encoding (~240 us per 1,000
records) and building the RecordMetadata list (~100 us).

Retries resend only the partitions that failed, so a produce whose response was lost may
store its records twice (at-least-once, as Kafka's non-idempotent producer).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_
from typing import Any

from kafka.protocol.producer import ProduceRequest

from core.backends import errors as be
from core.backends.batching import assign_partitions, encode_batches
from core.backends.kafka.client import KafkaClient
from core.backends.kafka.codes import LEADER_MOVED, kafka_error
from core.backends.kafka.connection import TransportError
from core.backends.kafka.retry import Deadline, RetryableProblem
from core.backends.partitioner import StickyPartitioner
from core.backends.types import ProducerRecord, RecordMetadata, TopicPartition
from core.log.records import encode_batch
from core.protocol.errors import ErrorCode as E

__all__ = ["Producer"]

log = logging.getLogger(__name__)

_PRODUCE_VERSIONS = (3, 9)
_TopicData = ProduceRequest.TopicProduceData
_PartitionData = _TopicData.PartitionProduceData


@dataclass
class _Batch:
    """Records of one partition sent as one batch; encoded once, re-encoded only if split."""

    partition: int
    indexes: list[int]
    data: bytearray | None = None


@dataclass(frozen=True, slots=True)
class _Outcome:
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    message: str | None = None


class Producer:
    """``LogBackend.produce`` for ``KafkaBackend``."""

    def __init__(self, client: KafkaClient) -> None:
        self._client = client
        self._sticky = StickyPartitioner()

    def produce(self, topic: str, records: Sequence[ProducerRecord],
                acks: int) -> list[RecordMetadata]:
        client = self._client
        client.check_open()
        if not records:
            return []
        what = f"producing to topic {topic!r}"
        deadline = Deadline(client.config.delivery_timeout_ms)
        unreachable_ms = client.config.delivery_timeout_ms
        meta = client.retrying(what, lambda: client.topic(topic, deadline), deadline,
                               unreachable_ms=unreachable_ms)
        try:
            groups = self._assign(topic, records, len(meta.partitions))
        except be.UnknownTopicError:
            # An explicit partition past the cached count: partitions may have been added.
            meta = client.retrying(what, lambda: client.topic(topic, deadline, fresh=True),
                                   deadline, unreachable_ms=unreachable_ms)
            groups = self._assign(topic, records, len(meta.partitions))
        now = int(time.time() * 1000)
        compression = client.config.compression
        # Batches of one partition go out one request after another, so they keep their order.
        queues = {p: deque(_Batch(p, idx, data) for idx, data in encode_batches(
                      records, indexes, compression=compression, now=now))
                  for p, indexes in groups.items()}
        out: list[RecordMetadata | None] = [None] * len(records)

        def attempt() -> None:
            while queues:
                self._round(topic, records, queues, out, acks, now, deadline)

        client.retrying(what, attempt, deadline, unreachable_ms=unreachable_ms)
        return out  # type: ignore[return-value]

    def _assign(self, topic: str, records: Sequence[ProducerRecord],
                count: int) -> dict[int, list[int]]:
        return assign_partitions(topic, records, count,
                                 lambda: self._sticky.next_partition(topic, count))

    def _round(self, topic: str, records: Sequence[ProducerRecord],
               queues: dict[int, deque[_Batch]], out: list[RecordMetadata | None], acks: int,
               now: int, deadline: Deadline) -> None:
        """Send the first pending batch of every partition; raise RetryableProblem if any
        must be sent again."""
        client = self._client
        heads = {p: q[0] for p, q in queues.items()}
        for batch in heads.values():
            if batch.data is None:
                batch.data = encode_batch([records[i] for i in batch.indexes],
                                          compression=client.config.compression,
                                          default_timestamp=now)
        by_leader = client.leaders([TopicPartition(topic, p) for p in heads], deadline)
        calls = [
            (lambda leader=leader, tps=tps: self._send(
                leader, topic, [heads[tp[1]] for tp in tps], acks, deadline))
            for leader, tps in by_leader.items()
        ]
        retry: BaseException | None = None
        fatal: BaseException | None = None
        for future, tps in zip(client.parallel(calls), by_leader.values(), strict=True):
            try:
                outcomes = future.result()
            except (TransportError, RetryableProblem) as exc:
                retry = retry or exc
                continue
            except be.BackendError as exc:
                fatal = fatal or exc
                continue
            for tp in tps:
                problem = self._settle(topic, records, queues, out, heads[tp[1]],
                                       outcomes[tp[1]], now)
                if isinstance(problem, RetryableProblem):
                    retry = retry or problem
                elif problem is not None:
                    fatal = fatal or problem
        if fatal is not None:
            raise fatal
        if retry is not None:
            raise retry

    def _send(self, leader: int, topic: str, batches: list[_Batch], acks: int,
              deadline: Deadline) -> dict[int, _Outcome]:
        client = self._client
        timeout_ms = client.config.request_timeout_ms

        def build(version: int) -> Any:
            return ProduceRequest(
                transactional_id=None, acks=acks, timeout_ms=timeout_ms,
                topic_data=[_TopicData(name=topic, partition_data=[
                    _PartitionData(index=b.partition, records=b.data) for b in batches])])

        response = client.send_to_node(leader, ProduceRequest, build,
                                       versions=_PRODUCE_VERSIONS, deadline=deadline,
                                       expect_response=acks != 0)
        if response is None:  # acks=0: the broker does not answer
            return {b.partition: _Outcome(0) for b in batches}
        outcomes = {b.partition: _Outcome(E.UNKNOWN_SERVER_ERROR, message="no answer")
                    for b in batches}
        for t in response.responses:
            for p in t.partition_responses:
                message = p.error_message
                if not message and p.record_errors:
                    message = p.record_errors[0].batch_index_error_message
                outcomes[p.index] = _Outcome(p.error_code, p.base_offset, p.log_append_time_ms,
                                             message)
        return outcomes

    @staticmethod
    def _record_metadata(topic: str, records: Sequence[ProducerRecord],
                         out: list[RecordMetadata | None], batch: _Batch, outcome: _Outcome,
                         now: int) -> None:
        """Fill ``out`` for a stored batch. Built with map/zip over C iterators: this runs for
        every produced record, and a Python-level loop would cost as much as the encoding."""
        indexes = batch.indexes
        n = len(indexes)
        base = outcome.base_offset
        offsets = range(base, base + n) if base >= 0 else repeat(-1, n)  # acks=0: unknown
        if outcome.log_append_time_ms >= 0:
            stamps: Any = repeat(outcome.log_append_time_ms, n)
        else:
            given = [records[i][3] for i in indexes]
            stamps = repeat(now, n) if all(map(is_, given, repeat(None))) else [
                now if ts is None else ts for ts in given]
        metas = list(map(tuple.__new__, repeat(RecordMetadata, n),
                         zip(repeat(topic, n), repeat(batch.partition, n), offsets, stamps,
                             strict=True)))
        if n == len(out) and indexes[0] == 0 and indexes[-1] == n - 1:
            out[:] = metas
        else:
            for i, meta in zip(indexes, metas, strict=True):
                out[i] = meta

    def _settle(self, topic: str, records: Sequence[ProducerRecord],
                queues: dict[int, deque[_Batch]], out: list[RecordMetadata | None],
                batch: _Batch, outcome: _Outcome, now: int) -> BaseException | None:
        """Apply one partition's outcome: record offsets, split, or report a problem."""
        partition = batch.partition
        code = outcome.error_code
        if code == E.NONE:
            self._record_metadata(topic, records, out, batch, outcome, now)
            queue = queues[partition]
            queue.popleft()
            if not queue:
                del queues[partition]
            return None
        context = f"producing to partition {partition} of topic {topic!r}"
        if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE) and len(batch.indexes) > 1:
            # Kafka's producer does the same: the topic's max.message.bytes may be below our
            # batch target, so halve the batch until it fits or holds a single record.
            half = len(batch.indexes) // 2
            queue = queues[partition]
            queue.popleft()
            queue.extendleft([_Batch(partition, batch.indexes[half:]),
                              _Batch(partition, batch.indexes[:half])])
            log.debug("%s: batch of %d records too large, split", context, len(batch.indexes))
            return None
        if code in LEADER_MOVED or code == E.UNKNOWN_TOPIC_OR_PARTITION:
            # UNKNOWN_TOPIC_OR_PARTITION here means metadata was stale (the next round's
            # metadata lookup raises UnknownTopicError if the topic is really gone).
            return RetryableProblem(kafka_error(code, context, outcome.message),
                                    refresh_metadata=True)
        return kafka_error(code, context, outcome.message)
