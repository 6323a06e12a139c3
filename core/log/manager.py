"""The LogManager: every topic of one data directory, its metadata, and background maintenance.

Layout (see docs/architecture.md): ``DATA_DIR/.lock`` (core.log.lock), topic metadata in
``DATA_DIR/.topics/NAME.json`` and one ``DATA_DIR/NAME-P`` directory per partition. Only
per-topic overrides are stored; a topic's effective config is recomputed from the broker
defaults on every open, as Kafka does.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from core.log.config import TOPIC_CONFIGS, TopicConfig, parse_topic_configs
from core.log.dir_health import LogDirHealth
from core.log.errors import (
    InvalidConfigError,
    InvalidTopicError,
    LogClosedError,
    StorageError,
    TopicExistsError,
    UnknownTopicError,
)
from core.log.lock import DataDirLock
from core.log.log import PartitionLog
from core.log.maintenance import LogMaintenance, attempt
from core.log.partition_dirs import (
    remove_deleted_topics,
    remove_new_partitions,
    rename_aside,
    set_aside_strays,
    warn_strays,
)
from core.log.topic_metadata import (
    ZERO_TOPIC_ID,
    TopicMetadata,
    TopicMetadataStore,
    check_partition_count,
    new_topic_id,
    validate_topic_name,
)

__all__ = ["LogManager", "TopicMetadata"]

log = logging.getLogger(__name__)

_JOIN_TIMEOUT_S = 30.0  # a compaction pass in progress is allowed this long to finish


@dataclass
class _Topic:
    metadata: TopicMetadata
    # Replaced as a whole (never mutated), so log() can read it without the manager lock.
    logs: tuple[PartitionLog, ...] = ()


def _remove_all(directories: list[Path]) -> None:
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


class LogManager:
    """Owns a data directory: its lock, topic metadata and every partition's PartitionLog.

    Lifecycle: 1. ``LogManager.open(...)`` locks the directory, recovers every partition and
    starts the maintenance thread; 2. admin calls and ``log()`` from any thread;
    3. ``close()`` (idempotent) stops the thread, flushes and closes the logs, unlocks.

    Threads: admin calls are serialised by one lock; ``log()`` takes no lock, so produce and
    fetch paths never wait for admin work. Maintenance (core.log.maintenance) runs on its own
    thread over a snapshot of the logs; a failure in one log is logged and never stops the
    others.
    """

    def __init__(
        self,
        data_dir: Path,
        lock: DataDirLock,
        defaults: TopicConfig,
        clock: Callable[[], float],
        retention_check_interval_ms: int,
        cleaner_backoff_ms: int,
    ):
        self.data_dir = data_dir
        self.defaults = defaults
        self._dir_lock = lock
        self._clock = clock
        self._lock = threading.RLock()
        self._store = TopicMetadataStore(data_dir, defaults)
        #: Whether the directory takes writes (core.log.dir_health); shared by every log.
        self.health = LogDirHealth(data_dir)
        self._topics: dict[str, _Topic] = {}  # guarded by _lock for writes
        self._closed = False
        # Threads removing the directories of deleted topics (see delete_topic).
        self._removals: list[threading.Thread] = []
        self._maintenance = LogMaintenance(
            self._snapshot, clock=clock, retention_check_interval_ms=retention_check_interval_ms,
            cleaner_backoff_ms=cleaner_backoff_ms, name=f"ferry-log-maintenance[{data_dir}]")

    @classmethod
    def open(
        cls,
        data_dir: Path | str,
        *,
        defaults: TopicConfig | None = None,
        owner: Mapping[str, object] | None = None,
        background: bool = True,
        retention_check_interval_ms: int = 300000,
        cleaner_backoff_ms: int = 15000,
        clock: Callable[[], float] = time.time,
    ) -> LogManager:
        """Lock ``data_dir``, load topic metadata, open (recover) every partition and start
        the maintenance thread if ``background``. ``clock`` (seconds) is passed to every
        PartitionLog and used for maintenance times.

        Raises LogDirLockedError naming the holder; StorageError if the directory is unusable.
        """
        data_dir = Path(data_dir)
        lock = DataDirLock.acquire(data_dir, owner)
        manager = None
        try:
            manager = cls(data_dir, lock, defaults or TopicConfig(), clock,
                          retention_check_interval_ms, cleaner_backoff_ms)
            manager._recover()
        except BaseException:
            if manager is not None:
                manager._close_logs(clean=False)
            lock.release()
            raise
        if background:
            manager._maintenance.start()
        log.info("opened data directory %s with %d topics", data_dir, len(manager._topics))
        return manager

    # ------------------------------------------------------------------ topics

    def create_topic(
        self,
        name: str,
        partitions: int,
        overrides: Mapping[str, object] | None = None,
        *,
        internal: bool = False,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Create a topic; with ``validate_only`` only check that it could be created.

        Raises InvalidTopicError (name, partitions), InvalidConfigError (naming the key),
        TopicExistsError.
        """
        validate_topic_name(name)
        check_partition_count(partitions)
        normalized = parse_topic_configs(overrides or {})
        config = self.defaults.with_overrides(normalized)
        with self._lock:
            self._check_open()
            if name in self._topics:
                raise TopicExistsError(f"Topic '{name}' already exists.")
            self._check_collision(name)
            metadata = TopicMetadata(name, partitions, normalized, config,
                                     ZERO_TOPIC_ID if validate_only else new_topic_id(),
                                     internal, int(self._clock() * 1000))
            if validate_only:
                return metadata
            self.health.check_writable()
            with self._writing(f"creation of topic {name}"):
                set_aside_strays(self.data_dir, name, range(partitions))
                self._store.write(metadata)
                try:
                    logs = self._open_logs(metadata, range(partitions))
                except BaseException:
                    self._store.remove(name)
                    remove_new_partitions(self.data_dir, name, range(partitions))
                    raise
            self._topics[name] = _Topic(metadata, logs)
        self._maintenance.wake()
        log.info("created topic %s (%d partitions, overrides %s)", name, partitions, normalized)
        return self._copy(metadata)

    def add_partitions(self, name: str, total: int) -> TopicMetadata:
        """Grow ``name`` to ``total`` partitions (Kafka CreatePartitions: only increases)."""
        check_partition_count(total)
        with self._lock:
            topic = self._get(name)
            current = topic.metadata.partitions
            if total <= current:
                raise InvalidTopicError(
                    f"Topic '{name}' already has {current} partitions; the partition count "
                    f"can only be increased, not set to {total}."
                )
            new_range = range(current, total)
            self.health.check_writable()
            with self._writing(f"new partitions of topic {name}"):
                set_aside_strays(self.data_dir, name, new_range)
                metadata = replace(topic.metadata, partitions=total)
                self._store.write(metadata)
                try:
                    added = self._open_logs(metadata, new_range)
                except BaseException:
                    self._store.write(topic.metadata)
                    remove_new_partitions(self.data_dir, name, new_range)
                    raise
            self._topics[name] = _Topic(metadata, topic.logs + added)
        log.info("topic %s grew from %d to %d partitions", name, current, total)
        return self._copy(metadata)

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and its data; a topic created later with this name starts empty."""
        with self._lock:
            topic = self._get(name)
            # Metadata goes first: after a crash anywhere below, the topic stays deleted and
            # its leftover directories are at worst strays.
            self._store.remove(name)
            del self._topics[name]
            doomed = []
            for plog in topic.logs:
                attempt(plog.close, what="close for deletion", plog=plog)
                try:
                    doomed.append(rename_aside(self.data_dir, name, plog.partition, "delete"))
                except StorageError:
                    # The directory keeps its old name; a topic re-created with this name
                    # sets it aside as a stray instead of adopting its data.
                    log.exception("could not move %s aside for deletion", plog.directory)
            # Removing files takes a while for a large topic; the renamed directories no
            # longer clash with a re-created topic, so, as Kafka does, they are removed in
            # the background and the deletion is complete for clients now. What is left
            # (a crash, a close first) is removed on the next open.
            doomed = [d for d in doomed if d is not None]
            if doomed:
                self._removals = [t for t in self._removals if t.is_alive()]
                removal = threading.Thread(target=_remove_all, args=(doomed,), daemon=True,
                                           name=f"ferry-delete[{name}]")
                removal.start()
                self._removals.append(removal)
        log.info("deleted topic %s", name)

    def topics(self) -> list[str]:
        """Names of all topics, internal ones included, sorted."""
        self._check_open()
        return sorted(self._topics)

    def topic(self, name: str) -> TopicMetadata:
        """The metadata of ``name``; UnknownTopicError if it does not exist."""
        return self._copy(self._get(name).metadata)

    def alter_topic_configs(
        self, name: str, set_configs: Mapping[str, object], delete_configs: Iterable[str] = ()
    ) -> TopicMetadata:
        """Set and delete per-topic overrides (IncrementalAlterConfigs SET / DELETE); deleted
        keys fall back to the broker default. The new config reaches every partition."""
        normalized = parse_topic_configs(set_configs)
        deleted = list(delete_configs)
        for key in deleted:
            if key not in TOPIC_CONFIGS:
                raise InvalidConfigError(f"Unknown topic config name: {key}", key=key)
            if key in normalized:
                raise InvalidConfigError(f"Config {key} is both set and deleted", key=key)
        with self._lock:
            topic = self._get(name)
            overrides = {k: v for k, v in topic.metadata.overrides.items() if k not in deleted}
            overrides.update(normalized)
            config = self.defaults.with_overrides(overrides)
            metadata = replace(topic.metadata, overrides=overrides, config=config)
            self.health.check_writable()
            with self._writing(f"config change of topic {name}"):
                self._store.write(metadata)
            topic.metadata = metadata
            for plog in topic.logs:
                plog.update_config(config)
        self._maintenance.wake()
        log.info("altered configs of topic %s: set %s, deleted %s", name, normalized, deleted)
        return self._copy(metadata)

    def set_defaults(self, defaults: TopicConfig) -> None:
        """New broker-level topic defaults (a dynamic broker config): every topic's config
        is recomputed from them and its overrides, and reaches its partitions at once."""
        with self._lock:
            self._check_open()
            self.defaults = defaults
            self._store.defaults = defaults
            for topic in self._topics.values():
                config = defaults.with_overrides(topic.metadata.overrides)
                topic.metadata = replace(topic.metadata, config=config)
                for plog in topic.logs:
                    plog.update_config(config)
        self._maintenance.wake()

    def log(self, topic: str, partition: int) -> PartitionLog:
        """The PartitionLog of ``topic``-``partition``; UnknownTopicError if there is none."""
        logs = self._get(topic).logs
        if not 0 <= partition < len(logs):
            raise UnknownTopicError(
                f"Topic '{topic}' has {len(logs)} partitions; partition {partition} does not exist"
            )
        return logs[partition]

    # ------------------------------------------------------------------ maintenance

    def run_maintenance(self, now_ms: int | None = None) -> None:
        """One full pass now, on the calling thread: retention, compaction, flush.ms."""
        self._check_open()
        self._maintenance.run_pass(int(self._clock() * 1000) if now_ms is None else now_ms)

    def flush(self) -> None:
        """fsync every partition. Every log is tried; the first failure is then raised."""
        self._check_open()
        errors = [exc for _, plog in self._snapshot()
                  if (exc := attempt(plog.flush, what="flush", plog=plog))]
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Stop maintenance, flush and close every log, release the lock. Idempotent.

        Every log is closed even if one fails; a failure is raised once all are done.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if not self._maintenance.stop(_JOIN_TIMEOUT_S):
            log.warning("maintenance of %s did not stop within %.0f s; closing anyway",
                        self.data_dir, _JOIN_TIMEOUT_S)
        deadline = time.monotonic() + _JOIN_TIMEOUT_S
        for removal in self._removals:
            removal.join(max(0.0, deadline - time.monotonic()))
        try:
            self._close_logs(clean=True)
        finally:
            self._dir_lock.release()
            log.info("closed data directory %s", self.data_dir)

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    @contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """Run a metadata or directory write: an OSError becomes StorageError and, like
        any StorageError from a write, takes the data directory offline for writes."""
        try:
            yield
        except OSError as exc:
            self.health.failed(what, exc)
            raise StorageError(f"{what} failed in {self.data_dir}: {exc}") from exc
        except StorageError as exc:
            self.health.failed(what, exc)
            raise

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"the log manager of {self.data_dir} is closed")

    def _get(self, name: str) -> _Topic:
        self._check_open()
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicError(f"Topic '{name}' does not exist")
        return topic

    def _snapshot(self) -> list[tuple[TopicConfig, PartitionLog]]:
        with self._lock:
            return [(t.metadata.config, plog) for t in self._topics.values() for plog in t.logs]

    @staticmethod
    def _copy(metadata: TopicMetadata) -> TopicMetadata:
        return replace(metadata, overrides=dict(metadata.overrides))

    def _check_collision(self, name: str) -> None:
        # Kafka refuses topics whose names differ only by '.' versus '_': their metric
        # names would be the same.
        key = name.replace(".", "_")
        for other in self._topics:
            if other.replace(".", "_") == key:
                raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")

    def _open_logs(self, metadata: TopicMetadata, partitions: range) -> tuple[PartitionLog, ...]:
        opened: list[PartitionLog] = []
        try:
            for p in partitions:
                opened.append(PartitionLog.open(
                    self.data_dir / f"{metadata.name}-{p}", metadata.name, p, metadata.config,
                    clock=self._clock, health=self.health))
        except BaseException:
            for plog in opened:
                attempt(plog.close, what="close", plog=plog)
            raise
        return tuple(opened)

    def _close_logs(self, *, clean: bool) -> None:
        """Close (which flushes) every log; on a ``clean`` close raise if any failed."""
        with self._lock:
            logs = [plog for t in self._topics.values() for plog in t.logs]
            self._topics = {}
        errors = [exc for plog in logs if (exc := attempt(plog.close, what="close", plog=plog))]
        if errors and clean:
            raise StorageError(
                f"{len(errors)} partitions of {self.data_dir} failed to close cleanly "
                f"(first: {errors[0]}); recovery runs on the next open"
            ) from errors[0]

    # ------------------------------------------------------------------ recovery

    def _recover(self) -> None:
        remove_deleted_topics(self.data_dir)
        for metadata in self._store.load_all():
            logs = self._open_logs(metadata, range(metadata.partitions))
            self._topics[metadata.name] = _Topic(metadata, logs)
        expected = {f"{name}-{p}" for name, topic in self._topics.items()
                    for p in range(topic.metadata.partitions)}
        warn_strays(self.data_dir, expected)
