"""``TopicReader``: one compacted topic read from its start and followed, as Kafka Connect's
``KafkaBasedLog`` does, on any LogBackend.

Lifecycle:

1. ``start(timeout)`` creates the topic if it is missing (``cleanup.policy=compact``, the
   given partition count), checks an existing one (a topic that must have one partition
   and has more, or whose cleanup policy is not ``compact``, is refused with
   ``ConfigError``, as Kafka refuses it), then starts the reader thread and waits until it
   has applied every record up to the end offsets seen at start. ``on_caught_up`` runs on
   the reader thread at that moment, before any later record is applied.
2. The reader thread calls ``callback(record)`` for every record of every partition, in
   offset order within a partition. A callback that raises is logged and the record
   skipped; the thread never dies of it.
3. ``read_to_end(timeout)`` is the read-your-writes barrier: it returns once the reader
   has applied everything up to the end offsets at the time of the call. ``send`` appends
   records (keyed, placed by Kafka's default partitioner) and returns once durable.
4. ``stop(timeout)`` stops and joins the reader thread (bounded).

Failures: a backend error while following the topic is logged (once when the reader loses
the log, then every ``_LOG_REPEAT_S``) and retried with exponential backoff; ``connected``
turns False, ``last_error`` says why and ``seconds_since_contact()`` grows, so a herder can
stop its tasks when the worker is cut off from the log.

Threads: every public method may be called from any thread; ``callback`` and
``on_caught_up`` run on the reader thread only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from connect.api.errors import ConfigError, ConnectError
from core.backends import (
    ConsumerRecord,
    LogBackend,
    OffsetSpec,
    ProducerRecord,
    RecordMetadata,
    TopicPartition,
)
from core.backends import errors as be

__all__ = ["ReadToEndTimeoutError", "TopicReader"]

log = logging.getLogger(__name__)

#: Longest wait of one fetch for new records (bounds shutdown latency).
POLL_MAX_WAIT_MS = 500
#: First and longest pause after a failed backend call.
RETRY_BACKOFF_S = 0.1
RETRY_BACKOFF_MAX_S = 5.0
#: While the log stays unreachable, the failure is logged again this often.
_LOG_REPEAT_S = 30.0


class ReadToEndTimeoutError(ConnectError, TimeoutError):
    """The topic was not read to its end in time (the log is slow or unreachable)."""


class TopicReader:
    """Follows ``topic`` from its start; see the module docstring for the lifecycle."""

    def __init__(self, backend: LogBackend, topic: str,
                 callback: Callable[[ConsumerRecord], None], *, partitions: int,
                 replication_factor: int | None = None,
                 topic_settings: Mapping[str, str] | None = None,
                 require_single_partition: bool = False,
                 topic_config_name: str = "", purpose: str = "") -> None:
        """``topic_settings`` are extra topic configs used when the topic is created
        (``cleanup.policy`` is always ``compact``); ``topic_config_name`` (the worker key
        naming the topic, e.g. ``config.storage.topic``) and ``purpose`` only make error
        messages and logs precise."""
        if not topic or not topic.strip():
            raise ConfigError(topic_config_name or None,
                              f"Must specify topic for {purpose or 'the internal topic'}.")
        self.backend = backend
        self.topic = topic
        self._callback = callback
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._topic_settings = dict(topic_settings or {})
        self._single = require_single_partition
        self._config_name = topic_config_name or "the topic setting"
        self._purpose = purpose or "internal state"
        self._cond = threading.Condition()
        self._positions: dict[TopicPartition, int] = {}   # next offset to apply
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._connected = False
        self._last_contact = time.monotonic()
        self._last_error: str | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._initial_done = threading.Event()
        self._on_caught_up: Callable[[], None] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 30.0, *,
              on_caught_up: Callable[[], None] | None = None) -> None:
        """Check or create the topic, start the reader and wait until it has read the
        topic to the end it had at start. Raises ``ConfigError`` for an unusable topic,
        ``ReadToEndTimeoutError`` (reader stopped again) when the log cannot be read in
        time, ``ConnectError`` for any other backend failure."""
        if self._thread is not None:
            raise ConnectError(f"the reader of topic {self.topic} was started twice")
        deadline = time.monotonic() + timeout
        self._ensure_topic(deadline)
        self._on_caught_up = on_caught_up
        self._initial_done.clear()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=f"topic-reader-{self.topic}",
                                        daemon=True)
        self._thread.start()
        if not self._initial_done.wait(max(0.0, deadline - time.monotonic())):
            problem = self._last_error or "no answer from the log"
            self.stop()
            raise ReadToEndTimeoutError(
                f"Reading the {self._purpose} topic {self.topic} to its end did not finish "
                f"within {timeout:.0f} s ({problem})")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the reader thread, waiting up to ``timeout`` for it. Idempotent."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("the reader of topic %s did not stop within %.0f s; abandoning it",
                            self.topic, timeout)

    # ------------------------------------------------------------------ state

    @property
    def running(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive() and not self._stopping.is_set()

    @property
    def connected(self) -> bool:
        """Whether the reader's last call to the log succeeded."""
        return self._connected

    @property
    def last_error(self) -> str | None:
        """Why the reader last failed to read the log, or None while it reads fine."""
        return self._last_error

    def seconds_since_contact(self) -> float:
        """Seconds since a call to the log last succeeded (reader fetches and sends). It
        grows while a call is blocked on an unreachable log, before that call fails."""
        return max(0.0, time.monotonic() - self._last_contact)

    @property
    def caught_up(self) -> bool:
        """Whether the reader is connected and, at its last fetch, had applied everything
        up to the partitions' high watermarks."""
        with self._cond:
            return (self._connected and self._initial_done.is_set()
                    and all(self._positions.get(tp, 0) >= hw
                            for tp, hw in self._high_watermarks.items()))

    def positions(self) -> dict[TopicPartition, int]:
        """The next offset the reader will apply, per partition."""
        with self._cond:
            return dict(self._positions)

    @property
    def partition_count(self) -> int:
        with self._cond:
            return len(self._positions) or self._partitions

    # ------------------------------------------------------------------ reads and writes

    def end_offsets(self) -> dict[TopicPartition, int]:
        """The topic's end offsets now. Raises ``BackendError``."""
        tps = [TopicPartition(self.topic, p) for p in range(self.partition_count)]
        return self.backend.list_offsets(tps, OffsetSpec.LATEST)

    def read_to_end(self, timeout: float) -> None:
        """Wait until every record in the topic at the time of the call has been applied
        (``callback`` has returned for it). Raises ``ReadToEndTimeoutError``, or
        ``ConnectError`` when the reader is not running."""
        deadline = time.monotonic() + timeout
        if not self.running:
            raise ConnectError(f"the reader of topic {self.topic} is not running")
        ends = self._end_offsets_until(deadline, timeout)
        with self._cond:
            while not self._reached(ends):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping.is_set():
                    behind = ", ".join(
                        f"partition {tp.partition} at {self._positions.get(tp, 0)} of {end}"
                        for tp, end in ends.items() if self._positions.get(tp, 0) < end)
                    problem = ("the reader is stopping" if self._stopping.is_set()
                               else self._last_error or "the reader is still catching up")
                    raise ReadToEndTimeoutError(
                        f"The {self._purpose} topic {self.topic} was not read to its end "
                        f"within {timeout:.0f} s ({behind}; {problem})")
                self._cond.wait(min(remaining, 1.0))

    def _end_offsets_until(self, deadline: float, timeout: float) -> dict[TopicPartition, int]:
        backoff = RETRY_BACKOFF_S
        while True:
            try:
                return self.end_offsets()
            except be.RetriableError as exc:
                if time.monotonic() + backoff >= deadline:
                    raise ReadToEndTimeoutError(
                        f"The end of the {self._purpose} topic {self.topic} could not be "
                        f"read within {timeout:.0f} s: {exc}") from exc
                time.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
            except be.BackendError as exc:
                raise ConnectError(f"Reading the end of the {self._purpose} topic "
                                   f"{self.topic} failed: {exc}") from exc

    def _reached(self, ends: Mapping[TopicPartition, int]) -> bool:
        return all(self._positions.get(tp, 0) >= end for tp, end in ends.items())

    def send(self, key: str, value: bytes | None) -> RecordMetadata:
        """Append one record; returns once it is durable. Raises ``BackendError``."""
        return self.send_all([(key, value)])[0]

    def send_all(self, records: Sequence[tuple[str, bytes | None]]) -> list[RecordMetadata]:
        """Append records in order (one produce call); returns once they are durable.
        Records with the same key land on the same partition in this order. Raises
        ``BackendError``."""
        payload = [ProducerRecord(key=key.encode(), value=value) for key, value in records]
        landed = self.backend.produce(self.topic, payload)
        self._last_contact = time.monotonic()
        return landed

    # ------------------------------------------------------------------ topic

    def _ensure_topic(self, deadline: float) -> None:
        backoff = RETRY_BACKOFF_S
        while True:
            try:
                self._check_or_create()
                return
            except be.RetriableError as exc:
                if time.monotonic() + backoff >= deadline:
                    raise ConnectError(
                        f"The {self._purpose} topic {self.topic} could not be checked or "
                        f"created: {exc}") from exc
                log.info("checking the %s topic %s failed (%s); retrying", self._purpose,
                         self.topic, exc)
                time.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
            except be.BackendError as exc:
                raise ConnectError(f"The {self._purpose} topic {self.topic} could not be "
                                   f"checked or created: {exc}") from exc

    def _check_or_create(self) -> None:
        try:
            description = self.backend.describe_topic(self.topic)
        except be.UnknownTopicError:
            configs = {**self._topic_settings, "cleanup.policy": "compact"}
            partitions = 1 if self._single else self._partitions
            try:
                self.backend.create_topic(self.topic, partitions, configs,
                                          replication_factor=self._replication_factor)
                log.info("created the %s topic %s (%d partitions, cleanup.policy=compact)",
                         self._purpose, self.topic, partitions)
            except be.TopicExistsError:
                pass  # another worker created it first
            try:
                description = self.backend.describe_topic(self.topic)
            except be.UnknownTopicError as exc:
                # In a cluster the broker asked may not have applied the new topic's
                # metadata yet (Kafka's brokers learn it from the controller a moment
                # apart): retry, as Connect's KafkaBasedLog waits for the partitions.
                raise be.BackendUnavailableError(
                    f"topic {self.topic!r} was created but a broker does not know it yet"
                ) from exc
        count = len(description.partitions)
        if self._single and count > 1:
            raise ConfigError(
                self._config_name,
                f"Topic '{self.topic}' supplied via the '{self._config_name}' property is "
                f"required to have a single partition in order to guarantee consistency of "
                f"{self._purpose}, but found {count} partitions. Delete the topic or set "
                f"'{self._config_name}' to another topic.")
        policy = description.configs.get("cleanup.policy")
        if policy is not None:
            policies = {p.strip().lower() for p in policy.split(",") if p.strip()}
            if policies != {"compact"}:
                raise ConfigError(
                    self._config_name,
                    f"Topic '{self.topic}' supplied via the '{self._config_name}' property is "
                    f"required to have 'cleanup.policy=compact' to guarantee consistency and "
                    f"durability of {self._purpose}, but found the topic currently has "
                    f"'cleanup.policy={policy}'. Continuing would likely result in eventually "
                    f"losing {self._purpose} and problems restarting this Connect cluster in "
                    f"the future. Change the '{self._config_name}' property to use a topic "
                    f"with 'cleanup.policy=compact' only, or alter the topic "
                    f"(ferry topics --alter --config cleanup.policy=compact).")
        with self._cond:
            self._positions = {}
            self._partitions = count

    # ------------------------------------------------------------------ the reader thread

    def _run(self) -> None:
        backoff = RETRY_BACKOFF_S
        failing_since: float | None = None
        last_logged = 0.0
        initial_ends: dict[TopicPartition, int] | None = None
        while not self._stopping.is_set():
            try:
                if not self._positions:
                    self._init_positions()
                if not self._initial_done.is_set():
                    if initial_ends is None:
                        initial_ends = self.end_offsets()
                        self._contact()
                    with self._cond:
                        reached = self._reached(initial_ends)
                    if reached:
                        initial_ends = None
                        self._finish_initial_read()
                        continue
                self._poll()
                if failing_since is not None:
                    log.info("reading the %s topic %s again after %.1f s", self._purpose,
                             self.topic, time.monotonic() - failing_since)
                    failing_since = None
                backoff = RETRY_BACKOFF_S
            except be.OffsetOutOfRangeError:
                self._reset_out_of_range()
            except Exception as exc:  # the reader must never die: log, back off, retry
                now = time.monotonic()
                self._connected = False
                self._last_error = f"{type(exc).__name__}: {exc}"
                if failing_since is None or now - last_logged >= _LOG_REPEAT_S:
                    level = logging.WARNING if isinstance(exc, be.BackendError) else logging.ERROR
                    log.log(level, "reading the %s topic %s failed (%s); retrying",
                            self._purpose, self.topic, self._last_error,
                            exc_info=not isinstance(exc, be.BackendError))
                    last_logged = now
                    failing_since = failing_since or now
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)

    def _finish_initial_read(self) -> None:
        hook = self._on_caught_up
        if hook is not None:
            try:
                hook()
            except Exception:
                log.exception("the caught-up hook of the topic %s reader failed", self.topic)
        self._initial_done.set()

    def _contact(self) -> None:
        self._connected = True
        self._last_error = None
        self._last_contact = time.monotonic()

    def _init_positions(self) -> None:
        count = self.backend.partition_count(self.topic)
        tps = [TopicPartition(self.topic, p) for p in range(count)]
        starts = self.backend.list_offsets(tps, OffsetSpec.EARLIEST)
        with self._cond:
            self._positions = {tp: starts[tp] for tp in tps}
            self._partitions = count

    def _poll(self) -> None:
        with self._cond:
            positions = dict(self._positions)
        results = self.backend.fetch(positions, max_wait_ms=POLL_MAX_WAIT_MS)
        self._contact()
        for tp, result in results.items():
            for record in result.records:
                if self._stopping.is_set():
                    return
                try:
                    self._callback(record)
                except Exception:
                    log.exception("applying record %d of %s-%d (key %r) failed; skipping it",
                                  record.offset, tp.topic, tp.partition, record.key)
                with self._cond:
                    self._positions[tp] = record.offset + 1
            with self._cond:
                self._positions[tp] = max(self._positions[tp], result.next_offset)
                self._high_watermarks[tp] = result.high_watermark
                self._cond.notify_all()

    def _reset_out_of_range(self) -> None:
        """A position fell below the log start (records deleted under the reader): move
        to the log start, as a consumer with ``auto.offset.reset=earliest`` does."""
        with self._cond:
            tps = list(self._positions)
        try:
            starts = self.backend.list_offsets(tps, OffsetSpec.EARLIEST)
            ends = self.backend.list_offsets(tps, OffsetSpec.LATEST)
        except be.BackendError as exc:
            log.warning("resetting positions in topic %s failed: %s", self.topic, exc)
            self._stopping.wait(RETRY_BACKOFF_S)
            return
        with self._cond:
            for tp in tps:
                pos = self._positions[tp]
                if pos < starts[tp] or pos > ends[tp]:
                    new = starts[tp] if pos < starts[tp] else ends[tp]
                    log.warning("position %d of %s-%d is out of range; moving to %d", pos,
                                tp.topic, tp.partition, new)
                    self._positions[tp] = new
            self._cond.notify_all()
