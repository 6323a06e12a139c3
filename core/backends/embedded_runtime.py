"""The per-directory runtime behind ``embedded:`` backends: one LogManager, one coordinator.

All embedded backends of one process opened on the same data directory share one runtime
(reference counted), so several components (Connect, the registry, the broker) can run on
one directory in one process; the directory lock keeps other processes out.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.group import GroupCoordinator
from core.group.log_store import LogOffsetStore
from core.log.config import broker_defaults
from core.log.errors import StorageError
from core.log.manager import LogManager

__all__ = ["EmbeddedRuntime", "RuntimeSettings", "acquire_runtime", "release_runtime"]

log = logging.getLogger(__name__)

_TICK_INTERVAL_S = 0.1


def _int_setting(config: Mapping[str, str], name: str, default: int) -> int:
    from core.backends.errors import InvalidConfigError

    raw = config.get(name)
    if raw is None:
        return default
    try:
        return int(str(raw).strip())
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {raw!r} for configuration {name}: expected a whole number", key=name
        ) from None


@dataclass(frozen=True)
class RuntimeSettings:
    """Broker-style settings of an embedded runtime, parsed once from Kafka-named strings."""

    num_partitions: int = 1
    group_initial_rebalance_delay_ms: int = 0
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    retention_check_interval_ms: int = 300000
    cleaner_backoff_ms: int = 15000
    raw: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> RuntimeSettings:
        from core.backends.errors import InvalidConfigError

        settings = cls(
            num_partitions=_int_setting(config, "num.partitions", 1),
            # In-process members join within microseconds of each other, so Kafka's 3 s
            # initial delay would only slow every first rebalance down.
            group_initial_rebalance_delay_ms=_int_setting(
                config, "group.initial.rebalance.delay.ms", 0
            ),
            group_min_session_timeout_ms=_int_setting(
                config, "group.min.session.timeout.ms", 6000
            ),
            group_max_session_timeout_ms=_int_setting(
                config, "group.max.session.timeout.ms", 1800000
            ),
            retention_check_interval_ms=_int_setting(
                config, "log.retention.check.interval.ms", 300000
            ),
            cleaner_backoff_ms=_int_setting(config, "log.cleaner.backoff.ms", 15000),
            raw=dict(config),
        )
        if settings.num_partitions < 1:
            raise InvalidConfigError(
                f"Invalid value {settings.num_partitions} for configuration num.partitions: "
                "Value must be at least 1",
                key="num.partitions",
            )
        return settings


class EmbeddedRuntime:
    """A LogManager plus a GroupCoordinator and the thread that ticks the coordinator."""

    def __init__(self, data_dir: Path, settings: RuntimeSettings,
                 owner: Mapping[str, object] | None = None) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.manager = LogManager.open(
            data_dir,
            defaults=broker_defaults(settings.raw),
            owner=owner or {"command": "ferry (embedded)"},
            retention_check_interval_ms=settings.retention_check_interval_ms,
            cleaner_backoff_ms=settings.cleaner_backoff_ms,
        )
        try:
            self.coordinator = GroupCoordinator(
                LogOffsetStore(self.manager),
                partition_exists=self._partition_exists,
                group_initial_rebalance_delay_ms=settings.group_initial_rebalance_delay_ms,
                group_min_session_timeout_ms=settings.group_min_session_timeout_ms,
                group_max_session_timeout_ms=settings.group_max_session_timeout_ms,
            )
            self.coordinator.load()
        except BaseException:
            self.manager.close()
            raise
        self.refcount = 0
        self._stop = threading.Event()
        self._ticker = threading.Thread(
            target=self._tick_loop, name=f"ferry-group-ticker:{data_dir.name}", daemon=True
        )
        self._ticker.start()

    def _partition_exists(self, topic: str, partition: int) -> bool:
        """Commits name existing partitions only, as Kafka's coordinator requires."""
        try:
            return 0 <= partition < self.manager.topic(topic).partitions
        except StorageError:
            return False

    def _tick_loop(self) -> None:
        while not self._stop.wait(_TICK_INTERVAL_S):
            try:
                self.coordinator.tick()
            except Exception:  # the ticker must outlive one bad group
                log.exception("group coordinator tick failed in %s", self.data_dir)

    def close(self) -> None:
        self._stop.set()
        self._ticker.join(timeout=5)
        try:
            self.coordinator.close()
        finally:
            self.manager.close()


_runtimes: dict[Path, EmbeddedRuntime] = {}
_runtimes_lock = threading.Lock()


def acquire_runtime(path: str | os.PathLike[str], config: Mapping[str, str],
                    owner: Mapping[str, object] | None = None) -> EmbeddedRuntime:
    """The runtime for ``path``, opening it on first use; pair with ``release_runtime``.

    Settings of later openers are ignored: the first one configures the directory.
    """
    key = Path(path).resolve()
    with _runtimes_lock:
        runtime = _runtimes.get(key)
        if runtime is None:
            started = time.monotonic()
            runtime = EmbeddedRuntime(key, RuntimeSettings.parse(config), owner)
            _runtimes[key] = runtime
            log.info("opened embedded log at %s in %.0f ms (%d topics)", key,
                     (time.monotonic() - started) * 1000, len(runtime.manager.topics()))
        runtime.refcount += 1
        return runtime


def release_runtime(runtime: EmbeddedRuntime) -> None:
    """Drop one reference; the last one closes the runtime and unlocks the directory."""
    with _runtimes_lock:
        runtime.refcount -= 1
        if runtime.refcount > 0:
            return
        _runtimes.pop(runtime.data_dir, None)
    runtime.close()
