"""``SchemaStore``: the ``_schemas`` topic as the registry's database.

One reader thread follows partition 0 of the topic from its start and applies every record
to a ``RegistryState``. The store is *ready* once the reader has reached the log end it saw
when it started (Confluent's bootstrap); until then the REST layer answers 503.

Writes are read-your-writes: ``write`` produces the records and returns only after this
store's own reader has consumed them, so the state a caller sees next already contains
them (Confluent's ``waitUntilKafkaReaderReachesOffset``). ``sync`` waits until the reader
has reached the current log end, which a new leader does before assigning ids and a
follower does after forwarding a write.

Threads: ``write`` and ``sync`` may be called from any thread; they only wait on the
reader's progress (a condition variable). Every wait is bounded by a timeout; a log that
cannot be reached gives ``StoreError`` / ``StoreTimeoutError``, never a hang.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence

from core.backends import LogBackend, OffsetSpec, ProducerRecord, TopicPartition
from core.backends.errors import (
    BackendError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    TopicExistsError,
    UnknownTopicError,
)
from schema_registry.errors import (
    RegistryConfigError,
    SchemaTooLargeError,
    StoreError,
    StoreTimeoutError,
)
from schema_registry.records import MalformedRecordError, Record, decode_record, encode_record
from schema_registry.state import RegistryState

__all__ = ["SchemaStore"]

log = logging.getLogger(__name__)

#: How long the reader's fetch waits for new records before looping (shutdown latency).
POLL_MAX_WAIT_MS = 500
#: Kafka's default ``max.message.bytes``, assumed until the topic's own value is known.
DEFAULT_MAX_MESSAGE_BYTES = 1048588
#: What a record batch adds to its records' keys and values (header and per-record framing,
#: generously), for the size check before a write.
BATCH_OVERHEAD_BYTES = 256
#: Pause after a failed backend call before the reader tries again.
RETRY_BACKOFF_S = 1.0


class SchemaStore:
    """Reads ``topic`` into ``state`` and writes records to it. See the module docstring."""

    #: How records become key/value bytes and back; a store of another topic (the DEK
    #: Registry's) subclasses with its own codec and state.
    _encode = staticmethod(encode_record)
    _decode = staticmethod(decode_record)
    #: How errors name the topic and the setting that chooses it.
    _what, _topic_setting = "schemas topic", "kafkastore.topic"

    def _summary(self) -> str:
        """What the state holds, for the log line once the topic has been read."""
        return (f"{len(self.state.subject_names())} subjects, highest schema id "
                f"{self.state.max_id}")

    def __init__(self, backend: LogBackend, state: RegistryState, *, topic: str = "_schemas",
                 timeout_s: float = 10.0, replication_factor: int | None = None,
                 skip_validation: bool = False) -> None:
        self.backend = backend
        self.state = state
        self.topic = topic
        self.timeout_s = timeout_s
        self._tp = TopicPartition(topic, 0)
        self._replication_factor = replication_factor
        self._skip_validation = skip_validation
        self._cond = threading.Condition()
        self.max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES  # the topic's, once checked
        self._position = 0          # next offset the reader will apply
        self._bootstrap_target: int | None = None
        self._ready = False
        self._topic_checked = False
        self._problem = "the registry is starting"
        self._fatal: RegistryConfigError | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the reader thread; it checks (or creates) the topic first, and a topic it
        cannot use shows as ``fatal_error``."""
        if self._thread is not None:
            raise RuntimeError("SchemaStore.start() called twice")
        self._thread = threading.Thread(target=self._run, name=f"sr-reader-{self.topic}",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the reader; waits up to ``timeout`` for it. Idempotent."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    @property
    def ready(self) -> bool:
        """True once the topic has been read to the end seen at startup."""
        return self._ready

    @property
    def problem(self) -> str:
        """Why the store is not ready (for error messages)."""
        return str(self._fatal) if self._fatal is not None else self._problem

    @property
    def fatal_error(self) -> RegistryConfigError | None:
        """The reason the topic cannot be used at all (the store then never gets ready)."""
        return self._fatal

    @property
    def position(self) -> int:
        """The next offset the reader will apply."""
        with self._cond:
            return self._position

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the bootstrap to finish; True if ready."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._ready and self._fatal is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return self._ready

    # ------------------------------------------------------------------ topic

    def ensure_topic(self) -> None:
        """Create the topic (1 partition, ``cleanup.policy=compact``) if it is missing and
        check it. Raises ``RegistryConfigError`` for a topic with more partitions or another
        cleanup policy (Confluent refuses those too), ``BackendError`` if the log cannot be
        reached."""
        try:
            description = self.backend.describe_topic(self.topic)
        except UnknownTopicError:
            try:
                self.backend.create_topic(self.topic, 1, {"cleanup.policy": "compact"},
                                          replication_factor=self._replication_factor)
                log.info("created the %s %s (1 partition, cleanup.policy=compact)",
                         self._what, self.topic)
            except TopicExistsError:
                pass  # another instance created it first
            description = self.backend.describe_topic(self.topic)
        with contextlib.suppress(ValueError):  # nonsense from a backend: Kafka's default
            self.max_message_bytes = int(description.configs.get(
                "max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES))
        if not self._skip_validation:
            partitions = len(description.partitions)
            if partitions != 1:
                raise RegistryConfigError(
                    f"the {self._what} {self.topic} has {partitions} partitions; it must have "
                    f"exactly 1 (delete it or set {self._topic_setting} to another topic)")
            policy = description.configs.get("cleanup.policy", "compact")
            if policy != "compact":
                raise RegistryConfigError(
                    f"the {self._what} {self.topic} has cleanup.policy={policy}; it must be "
                    f"'compact', or the log would delete schemas (fix it with ferry topics "
                    f"--alter --config cleanup.policy=compact)")
        self._topic_checked = True

    # ------------------------------------------------------------------ reads and writes

    def write(self, records: Sequence[Record], timeout: float | None = None) -> int:
        """Append ``records`` (in order, one batch) and wait until this store's reader has
        applied them. Returns the offset of the last one. Raises ``SchemaTooLargeError``
        (before writing) if they would exceed the topic's ``max.message.bytes``,
        ``StoreError`` if the log refused or could not be reached, ``StoreTimeoutError``
        if the records were written but not read back in time."""
        timeout = self.timeout_s if timeout is None else timeout
        payload = []
        size = BATCH_OVERHEAD_BYTES
        for record in records:
            key, value = self._encode(record)
            payload.append(ProducerRecord(key=key, value=value, partition=0))
            size += len(key) + len(value or b"") + 32
        if size > self.max_message_bytes:
            raise SchemaTooLargeError(
                f"Write failed because schema is too large: its record takes about {size} "
                f"bytes and the {self.topic} topic accepts {self.max_message_bytes} "
                f"(max.message.bytes)")
        try:
            landed = self.backend.produce(self.topic, payload)
        except RecordTooLargeError as exc:
            raise SchemaTooLargeError(
                f"Write failed because schema is too large: {exc}") from exc
        except BackendError as exc:
            raise StoreError(f"Error while writing to the {self.topic} topic: {exc}") from exc
        last = landed[-1].offset
        if not self._wait_for(last + 1, timeout):
            raise StoreTimeoutError(
                f"Write to the {self.topic} topic at offset {last} was not read back within "
                f"{timeout:.0f} s (reader at offset {self.position}: {self.problem})")
        return last

    def sync(self, timeout: float | None = None) -> None:
        """Wait until the reader has applied everything in the topic right now."""
        timeout = self.timeout_s if timeout is None else timeout
        try:
            end = self.backend.list_offsets([self._tp], OffsetSpec.LATEST)[self._tp]
        except BackendError as exc:
            raise StoreError(f"Error while reading the end of the {self.topic} topic: "
                             f"{exc}") from exc
        if not self._wait_for(end, timeout):
            raise StoreTimeoutError(
                f"The {self.topic} topic was not read to its end (offset {end}) within "
                f"{timeout:.0f} s (reader at offset {self.position}: {self.problem})")

    def _wait_for(self, offset: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._position < offset:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping.is_set():
                    return False
                self._cond.wait(remaining)
        return True

    # ------------------------------------------------------------------ the reader thread

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._step()
            except RegistryConfigError as exc:
                log.error("the schema registry cannot use its topic: %s", exc)
                with self._cond:
                    self._fatal = exc
                    self._cond.notify_all()
                return
            except BackendError as exc:
                if self._problem != str(exc):
                    log.warning("reading the %s topic failed, retrying: %s", self.topic, exc)
                self._problem = f"cannot read the {self.topic} topic: {exc}"
                self._stopping.wait(RETRY_BACKOFF_S)
            except Exception:  # top of the reader thread: keep reading, but say why
                log.exception("unexpected error in the %s reader", self.topic)
                self._stopping.wait(RETRY_BACKOFF_S)

    def _step(self) -> None:
        if not self._topic_checked:
            self.ensure_topic()
        if self._bootstrap_target is None:
            tp = self._tp
            start = self.backend.list_offsets([tp], OffsetSpec.EARLIEST)[tp]
            end = self.backend.list_offsets([tp], OffsetSpec.LATEST)[tp]
            with self._cond:
                self._position = max(self._position, start)
                self._bootstrap_target = end
            log.info("reading the %s topic from offset %d to %d", self.topic, start, end)
            self._problem = f"still reading the {self.topic} topic"
            self._check_ready()
        try:
            result = self.backend.fetch({self._tp: self._position},
                                        max_wait_ms=POLL_MAX_WAIT_MS)[self._tp]
        except OffsetOutOfRangeError as exc:
            self._out_of_range(exc)
            return
        except UnknownTopicError:
            self._topic_checked = False
            raise
        for record in result.records:
            self._apply(record.offset, record.key, record.value)
        with self._cond:
            self._position = max(self._position, result.next_offset)
            self._cond.notify_all()
        if self._ready:
            self._problem = ""
        self._check_ready()

    def _apply(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        try:
            decoded = self._decode(key, value)
        except MalformedRecordError as exc:
            log.warning("skipping record %d of %s: %s", offset, self.topic, exc)
            return
        if decoded is not None:
            self.state.apply(decoded)
        with self._cond:
            self._position = offset + 1
            self._cond.notify_all()

    def _check_ready(self) -> None:
        if self._ready or self._bootstrap_target is None:
            return
        with self._cond:
            if self._position >= self._bootstrap_target:
                self._ready = True
                self._problem = ""
                self._cond.notify_all()
        if self._ready:
            log.info("read the %s topic to offset %d: %s", self.topic, self._position,
                     self._summary())

    def _out_of_range(self, exc: OffsetOutOfRangeError) -> None:
        with self._cond:
            if exc.log_end_offset >= 0 and self._position > exc.log_end_offset:
                # The topic was deleted and created again: read the new one from scratch.
                log.warning("the %s topic is shorter than what was read (end %d < %d); "
                            "reading it again from the start", self.topic,
                            exc.log_end_offset, self._position)
                self.state.clear()
                self._position = 0
                self._bootstrap_target = None
            else:
                log.warning("records %d-%d of %s were removed before they were read",
                            self._position, exc.log_start_offset - 1, self.topic)
                self._position = max(exc.log_start_offset, 0)
