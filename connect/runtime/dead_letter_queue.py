"""The dead letter queue reporter: failed records go to ``errors.deadletterqueue.topic.name``
with Kafka's ``__connect.errors.*`` context headers (KIP-298).

Sinks write the consumed record as it was (key, value, headers bytes), as Kafka does.
Sources (beyond Kafka) write the original ``SourceRecord`` rendered as JSON: the record
never had bytes, so its topic, partition, key, value and source partition/offset are
shown as JSON text with ``str()`` for values JSON cannot hold.
"""

from __future__ import annotations

import contextlib
import json
import logging
import traceback
from typing import Any

from connect.runtime.retry_with_tolerance import ProcessingContext
from connect.runtime.task_metrics import TaskMetrics
from core.backends import LogBackend, ProducerRecord
from core.backends import errors as be

__all__ = ["HEADER_PREFIX", "DeadLetterQueueReporter"]

log = logging.getLogger(__name__)

HEADER_PREFIX = "__connect.errors."


class DeadLetterQueueReporter:
    """Writes one DLQ record per reported failure; used from one task's thread."""

    def __init__(self, backend: LogBackend, topic: str, *, replication_factor: int,
                 context_headers: bool, connector: str, task: int,
                 metrics: TaskMetrics | None = None) -> None:
        self._backend = backend
        self._metrics = metrics
        self._topic = topic
        self._headers = context_headers
        self._connector = connector
        self._task = task
        self._ensure_topic(replication_factor)

    def _ensure_topic(self, replication_factor: int) -> None:
        if self._topic in self._backend.list_topics():
            return
        try:
            self._backend.create_topic(self._topic, 1, replication_factor=replication_factor)
        except be.TopicExistsError:
            pass  # another task created it first
        except (be.InvalidConfigError, be.InvalidTopicError) as exc:
            # Kafka's default of 3 cannot be met by a small cluster (or embedded:); a DLQ
            # with fewer replicas beats failing every task, so fall back to the default.
            log.warning("creating DLQ topic %s: %s; using the backend's default replication",
                        self._topic, exc)
            with contextlib.suppress(be.TopicExistsError):
                self._backend.create_topic(self._topic, 1)

    def report(self, context: ProcessingContext) -> None:
        if context.consumed is not None:
            c = context.consumed
            key, value, headers = c.key, c.value, list(c.headers)
        else:
            key, value = None, _render_source(context.source_record).encode()
            headers = []
        if self._headers:
            headers.extend(self._context_headers(context))
        if self._metrics is None:
            self._backend.produce(self._topic, [ProducerRecord(key, value, headers)])
            return
        self._metrics.deadletterqueue_produce_requests += 1
        try:
            self._backend.produce(self._topic, [ProducerRecord(key, value, headers)])
        except Exception:
            self._metrics.deadletterqueue_produce_failures += 1
            raise

    def _context_headers(self, context: ProcessingContext) -> list[tuple[str, bytes | None]]:
        out: list[tuple[str, bytes | None]] = []
        c = context.consumed
        if c is not None:
            out += [("topic", c.topic), ("partition", str(c.partition)),
                    ("offset", str(c.offset))]
        elif context.source_record is not None:
            out.append(("topic", context.source_record.topic))
        err = context.error
        trace = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        out += [("connector.name", self._connector), ("task.id", str(self._task)),
                ("stage", str(context.stage)), ("class.name", context.executing_class),
                ("exception.class.name", f"{type(err).__module__}.{type(err).__qualname__}"),
                ("exception.message", str(err)), ("exception.stacktrace", trace)]
        return [(HEADER_PREFIX + k, v.encode()) for k, v in out]


def _render_source(record: Any) -> str:
    if record is None:
        return "null"
    return json.dumps({
        "topic": record.topic, "kafka_partition": record.kafka_partition,
        "key": record.key, "value": record.value, "timestamp": record.timestamp,
        "source_partition": record.source_partition, "source_offset": record.source_offset,
        "headers": [[h.key, h.value] for h in record.headers],
    }, default=str, separators=(",", ":"))
