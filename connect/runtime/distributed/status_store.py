"""``StatusBackingStore``: connector and task statuses and active topics in the status
topic, in Kafka Connect's exact format.

The topic (``status.storage.topic``, default ``connect-status``, 5 partitions) is compacted;
keys are plain strings, values compact JSON as Kafka's JsonConverter with
``schemas.enable=false`` writes them:

* ``status-connector-<name>`` and ``status-task-<name>-<n>``:
  ``{"state":"RUNNING","trace":null,"worker_id":"host:port","generation":7}``;
* ``status-topic-<topic>:connector-<name>``:
  ``{"topic":{"name":"t","connector":"c","task":0,"discoverTimestamp":ms}}`` (KIP-558);
* a tombstone deletes the entry (a DESTROYED status is written as a tombstone).

As in Kafka, a write becomes visible only once read back from the topic. Writes are
asynchronous: ``put`` queues the record for a sender thread and returns; ``flush`` waits
until the queue is written. A write that fails with a retriable error is retried unless it
has been overtaken (the entry was deleted, a write of a newer generation was made, or, for
``put_safe``, another write to the same entry followed).

``put_safe`` writes only when it is (probably) safe, with Kafka's rule: there is no
previous status, or the previous one was written by the same worker, or its generation is
not higher than the new one's. A worker of a stale generation (a zombie) therefore cannot
overwrite a status written by a newer generation. When reading, an UNASSIGNED task status
that arrives while the task is RUNNING at the same or a higher generation is ignored, as
Kafka ignores it (a race of rebalances).

Threads: every method may be called from any thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from connect.api.errors import ConnectError
from connect.runtime.distributed.topic_reader import (
    RETRY_BACKOFF_MAX_S,
    RETRY_BACKOFF_S,
    TopicReader,
)
from connect.runtime.herder import ConnectorTaskId
from core.backends import ConsumerRecord, LogBackend
from core.backends import errors as be

__all__ = [
    "STATUS_TOPIC_DEFAULT",
    "STATUS_TOPIC_PARTITIONS_DEFAULT",
    "ConnectorStatus",
    "State",
    "StatusBackingStore",
    "TaskStatus",
    "TopicStatus",
    "connector_status_key",
    "task_status_key",
    "topic_status_key",
]

log = logging.getLogger(__name__)

STATUS_TOPIC_DEFAULT = "connect-status"
STATUS_TOPIC_PARTITIONS_DEFAULT = 5

CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"
TOPIC_STATUS_PREFIX = "status-topic-"
TOPIC_STATUS_SEPARATOR = ":connector-"
#: Most records one produce call of the sender carries.
_SEND_BATCH = 500


class State(StrEnum):
    """Kafka's ``AbstractStatus.State``."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    DESTROYED = "DESTROYED"  # written as a tombstone
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class ConnectorStatus:
    connector: str
    state: State
    worker_id: str
    generation: int
    trace: str | None = None


@dataclass(frozen=True)
class TaskStatus:
    id: ConnectorTaskId
    state: State
    worker_id: str
    generation: int
    trace: str | None = None


@dataclass(frozen=True)
class TopicStatus:
    """A topic a connector's task used (KIP-558 active topics)."""

    topic: str
    connector: str
    task: int
    discover_timestamp: int


def connector_status_key(connector: str) -> str:
    return CONNECTOR_STATUS_PREFIX + connector


def task_status_key(task: ConnectorTaskId) -> str:
    return f"{TASK_STATUS_PREFIX}{task.connector}-{task.task}"


def topic_status_key(connector: str, topic: str) -> str:
    return f"{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}"


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _status_value(status: ConnectorStatus | TaskStatus) -> bytes | None:
    if status.state == State.DESTROYED:
        return None
    return _dumps({"state": State(status.state).value, "trace": status.trace,
                   "worker_id": status.worker_id, "generation": int(status.generation)})


def _topic_value(status: TopicStatus) -> bytes:
    return _dumps({"topic": {"name": status.topic, "connector": status.connector,
                             "task": int(status.task),
                             "discoverTimestamp": int(status.discover_timestamp)}})


S = TypeVar("S", ConnectorStatus, TaskStatus)


class _Entry(Generic[S]):
    """The last status read back for one key, and the write sequence (Kafka's CacheEntry).
    Guarded by the store's lock."""

    __slots__ = ("deleted", "sequence", "value")

    def __init__(self) -> None:
        self.value: S | None = None
        self.sequence = 0
        self.deleted = False

    def can_write_safely(self, status: S, sequence: int | None = None) -> bool:
        value = self.value
        safe = (value is None or value.worker_id == status.worker_id
                or value.generation <= status.generation)
        return safe and (sequence is None or sequence == self.sequence)


@dataclass
class _Send:
    key: str
    value: bytes | None
    entry: _Entry[Any] | None = None      # None for topic statuses
    status: ConnectorStatus | TaskStatus | None = None
    sequence: int = 0
    safe: bool = False


class StatusBackingStore:
    """The status topic, read into memory by a ``TopicReader``; see the module docstring.

    Lifecycle: construct → ``start()`` (creates/checks the topic, reads it) → reads and
    writes → ``stop()`` (writes what is queued, bounded by its timeout).
    """

    def __init__(self, backend: LogBackend, *, topic: str = STATUS_TOPIC_DEFAULT,
                 partitions: int = STATUS_TOPIC_PARTITIONS_DEFAULT,
                 replication_factor: int | None = None,
                 topic_settings: dict[str, str] | None = None) -> None:
        self.topic = topic
        self._lock = threading.Condition()
        self._connectors: dict[str, _Entry[ConnectorStatus]] = {}
        self._tasks: dict[str, dict[int, _Entry[TaskStatus]]] = {}
        self._topics: dict[str, dict[str, TopicStatus]] = {}
        self._generation = -1
        self._queue: deque[_Send] = deque()
        self._in_flight = 0
        self._stopping = threading.Event()
        self._sender: threading.Thread | None = None
        self.reader = TopicReader(
            backend, topic, self._on_record, partitions=partitions,
            replication_factor=replication_factor, topic_settings=topic_settings,
            topic_config_name="status.storage.topic",
            purpose="connector and task statuses")

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 30.0) -> None:
        """Create or check the topic, read it to its end and start the sender. Raises
        ``ConfigError`` for an unusable topic, ``ConnectError`` when the log cannot be read
        in time."""
        self.reader.start(timeout)
        self._stopping.clear()
        self._sender = threading.Thread(target=self._send_loop,
                                        name=f"status-sender-{self.topic}", daemon=True)
        self._sender.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Write queued statuses (waiting up to ``timeout``), then stop. Idempotent."""
        deadline = time.monotonic() + timeout
        if self._sender is not None and not self.flush(timeout):
            log.warning("stopping the status store with %d status writes unsent",
                        len(self._queue) + self._in_flight)
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.join(max(0.1, deadline - time.monotonic()))
        self.reader.stop(max(0.1, deadline - time.monotonic()))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued write was sent (or given up); True if it was in time."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._sender is None or not self._sender.is_alive():
                    return False
                self._lock.wait(min(remaining, 1.0))
        return True

    def refresh(self, timeout: float) -> None:
        """Read the topic to its current end. Raises ``ReadToEndTimeoutError``."""
        self.reader.read_to_end(timeout)

    # ------------------------------------------------------------------ writes

    def put(self, status: ConnectorStatus | TaskStatus) -> None:
        """Write a status whatever the previous one (DESTROYED writes a tombstone)."""
        self._enqueue(status, safe=False)

    def put_safe(self, status: ConnectorStatus | TaskStatus) -> None:
        """Write a status only if no status exists, the same worker wrote the previous one,
        or the previous one's generation is not higher (Kafka's ``putSafe``)."""
        self._enqueue(status, safe=True)

    def put_topic(self, status: TopicStatus) -> None:
        """Record an active topic of a connector (KIP-558)."""
        self._submit(_Send(topic_status_key(status.connector, status.topic),
                           _topic_value(status)))

    def delete_topic(self, connector: str, topic: str) -> None:
        """Forget one active topic of a connector (a tombstone)."""
        self._submit(_Send(topic_status_key(connector, topic), None))

    def reset_active_topics(self, connector: str) -> None:
        """Forget every active topic of a connector (``PUT .../topics/reset``)."""
        for status in self.get_all_topics(connector):
            self.delete_topic(connector, status.topic)

    def delete_connector(self, connector: str, *, worker_id: str, generation: int) -> None:
        """Tombstones for everything of a deleted connector, as Kafka's herder writes them:
        its active topics, each task status, then the connector status."""
        for topic in self.get_all_topics(connector):
            self.delete_topic(connector, topic.topic)
        for task in self.get_all(connector):
            self.put(TaskStatus(task.id, State.DESTROYED, worker_id, generation))
        self.put(ConnectorStatus(connector, State.DESTROYED, worker_id, generation))

    def _enqueue(self, status: ConnectorStatus | TaskStatus, *, safe: bool) -> None:
        if isinstance(status, ConnectorStatus):
            key = connector_status_key(status.connector)
        elif isinstance(status, TaskStatus):
            key = task_status_key(status.id)
        else:
            raise TypeError(f"expected a ConnectorStatus or TaskStatus, got {status!r}")
        value = _status_value(status)
        with self._lock:
            entry = self._entry_for(status)
            self._generation = status.generation
            if safe and not entry.can_write_safely(status):
                log.debug("not writing %s: the status %s of another worker has a newer "
                          "generation", status, entry.value)
                return
            entry.sequence += 1
            item = _Send(key, value, entry, status, entry.sequence, safe)
        self._submit(item)

    def _entry_for(self, status: ConnectorStatus | TaskStatus) -> _Entry[Any]:
        if isinstance(status, ConnectorStatus):
            return self._connectors.setdefault(status.connector, _Entry())
        return self._tasks.setdefault(status.id.connector, {}).setdefault(
            status.id.task, _Entry())

    def _submit(self, item: _Send) -> None:
        with self._lock:
            if self._sender is None:
                raise ConnectError("the status store is not started")
            self._queue.append(item)
            self._lock.notify_all()

    # ------------------------------------------------------------------ the sender thread

    def _overtaken(self, item: _Send) -> bool:
        """Kafka's rule for dropping a failed write instead of retrying it."""
        if item.entry is None or item.status is None:
            return False
        return (item.entry.deleted or item.status.generation != self._generation
                or (item.safe and not item.entry.can_write_safely(item.status, item.sequence)))

    def _send_loop(self) -> None:
        batch: list[_Send] = []
        backoff = RETRY_BACKOFF_S
        while True:
            with self._lock:
                if not batch:
                    while not self._queue and not self._stopping.is_set():
                        self._lock.wait(1.0)
                    if not self._queue:
                        return  # stopping with nothing to send
                    while self._queue and len(batch) < _SEND_BATCH:
                        batch.append(self._queue.popleft())
                    self._in_flight = len(batch)
            try:
                self.reader.send_all([(item.key, item.value) for item in batch])
                batch = []
                backoff = RETRY_BACKOFF_S
            except be.RetriableError as exc:
                with self._lock:
                    batch = [item for item in batch if not self._overtaken(item)]
                if self._stopping.is_set():
                    log.warning("dropping %d status writes at shutdown: %s", len(batch), exc)
                    batch = []
                else:
                    log.warning("writing %d statuses to topic %s failed (%s); retrying",
                                len(batch), self.topic, exc)
                    self._stopping.wait(backoff)
                    backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
            except Exception as exc:  # the sender must not die; the writes are lost
                log.error("writing %d statuses to topic %s failed: %s", len(batch),
                          self.topic, exc, exc_info=not isinstance(exc, be.BackendError))
                batch = []
            with self._lock:
                self._in_flight = len(batch)
                self._lock.notify_all()

    # ------------------------------------------------------------------ reads

    def get(self, connector: str) -> ConnectorStatus | None:
        with self._lock:
            entry = self._connectors.get(connector)
            return None if entry is None else entry.value

    def get_task(self, task: ConnectorTaskId) -> TaskStatus | None:
        with self._lock:
            entry = self._tasks.get(task.connector, {}).get(task.task)
            return None if entry is None else entry.value

    def get_all(self, connector: str) -> list[TaskStatus]:
        """Statuses of the connector's tasks, by task id."""
        with self._lock:
            entries = self._tasks.get(connector, {})
            return [e.value for _, e in sorted(entries.items()) if e.value is not None]

    def connectors(self) -> list[str]:
        """Connectors with a connector status, sorted."""
        with self._lock:
            return sorted(c for c, e in self._connectors.items() if e.value is not None)

    def get_topic(self, connector: str, topic: str) -> TopicStatus | None:
        with self._lock:
            return self._topics.get(connector, {}).get(topic)

    def get_all_topics(self, connector: str) -> list[TopicStatus]:
        """Active topics of a connector, by topic name."""
        with self._lock:
            found = self._topics.get(connector, {})
            return [found[t] for t in sorted(found)]

    # ------------------------------------------------------------------ the reader thread

    def _on_record(self, record: ConsumerRecord) -> None:
        try:
            key = (record.key or b"").decode()
        except UnicodeDecodeError:
            log.warning("Discarding status record at offset %d: the key is not UTF-8",
                        record.offset)
            return
        value = _parse_json(key, record.value)
        if value is _INVALID:
            return
        if key.startswith(CONNECTOR_STATUS_PREFIX):
            self._read_connector_status(key, value)
        elif key.startswith(TASK_STATUS_PREFIX):
            self._read_task_status(key, value)
        elif key.startswith(TOPIC_STATUS_PREFIX):
            self._read_topic_status(key, value)
        else:
            log.warning("Discarding record with invalid key %s", key)

    def _read_connector_status(self, key: str, value: Any) -> None:
        connector = key[len(CONNECTOR_STATUS_PREFIX):]
        if not connector:
            log.warning("Discarding record with invalid connector status key %s", key)
            return
        if value is None:
            with self._lock:
                removed = self._connectors.pop(connector, None)
                if removed is not None:
                    removed.deleted = True
                for entry in self._tasks.pop(connector, {}).values():
                    entry.deleted = True
            return
        parsed = _parse_status(key, value)
        if parsed is None:
            return
        state, trace, worker_id, generation = parsed
        with self._lock:
            self._connectors.setdefault(connector, _Entry()).value = ConnectorStatus(
                connector, state, worker_id, generation, trace)

    def _read_task_status(self, key: str, value: Any) -> None:
        task = _parse_task_key(key)
        if task is None:
            log.warning("Discarding record with invalid task status key %s", key)
            return
        if value is None:
            with self._lock:
                removed = self._tasks.get(task.connector, {}).pop(task.task, None)
                if removed is not None:
                    removed.deleted = True
            return
        parsed = _parse_status(key, value)
        if parsed is None:
            return
        state, trace, worker_id, generation = parsed
        status = TaskStatus(task, state, worker_id, generation, trace)
        with self._lock:
            entry = self._tasks.setdefault(task.connector, {}).setdefault(task.task, _Entry())
            current = entry.value
            # A worker that missed a newer RUNNING status may report UNASSIGNED for an
            # older or equal generation after a rebalance race: keep the RUNNING status.
            if (state == State.UNASSIGNED and current is not None
                    and current.state == State.RUNNING and current.generation >= generation):
                log.debug("ignoring stale status %s in favour of %s", status, current)
                return
            entry.value = status

    def _read_topic_status(self, key: str, value: Any) -> None:
        rest = key[len(TOPIC_STATUS_PREFIX):]
        topic, sep, connector = rest.partition(TOPIC_STATUS_SEPARATOR)
        if not sep or not topic or not connector or ":" in topic:
            log.warning("Discarding record with invalid topic status key %s", key)
            return
        if value is None:
            with self._lock:
                self._topics.get(connector, {}).pop(topic, None)
            return
        inner = value.get("topic") if isinstance(value, dict) else None
        if not isinstance(inner, dict):
            log.warning("Failed to parse topic status with key %s", key)
            return
        name, owner = inner.get("name"), inner.get("connector")
        task, discovered = inner.get("task"), inner.get("discoverTimestamp")
        if (not isinstance(name, str) or not isinstance(owner, str) or not _is_int(task)
                or not _is_int(discovered)):
            log.warning("Failed to parse topic status with key %s", key)
            return
        with self._lock:
            self._topics.setdefault(connector, {})[topic] = TopicStatus(
                name, owner, task, discovered)


_INVALID: Any = object()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_json(key: str, raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        log.error("Failed to deserialize status record %s: %s", key, exc)
        return _INVALID


def _parse_status(key: str, value: Any) -> tuple[State, str | None, str, int] | None:
    if not isinstance(value, dict):
        log.error("Invalid status type for %s: %s", key, type(value).__name__)
        return None
    try:
        state = State(value.get("state"))
    except ValueError:
        log.error("Failed to deserialize status %s: unknown state %r", key, value.get("state"))
        return None
    trace, worker_id, generation = (value.get("trace"), value.get("worker_id"),
                                    value.get("generation"))
    if (trace is not None and not isinstance(trace, str)) or not isinstance(worker_id, str) \
            or not _is_int(generation):
        log.error("Failed to deserialize status %s: %r", key, value)
        return None
    return state, trace, worker_id, generation


def _parse_task_key(key: str) -> ConnectorTaskId | None:
    """``status-task-<connector>-<n>``; the connector name may contain dashes."""
    parts = key.split("-")
    if len(parts) < 4:
        return None
    try:
        number = int(parts[-1])
    except ValueError:
        return None
    return ConnectorTaskId("-".join(parts[2:-1]), number)

