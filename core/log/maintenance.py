"""Background log maintenance: retention, compaction and flush.ms on a schedule.

One thread per LogManager. Every ``retention_check_interval_ms`` it runs
``enforce_retention`` on logs whose cleanup.policy includes ``delete``; every
``cleaner_backoff_ms`` it runs ``compact`` on logs whose policy includes ``compact``; and,
while some log has a finite ``flush.ms``, it calls ``maybe_flush`` on those logs every 100 ms
(or every flush.ms, if smaller). A failure in one log is logged with the partition's name
and never stops the thread or the work on other logs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.log.config import LONG_MAX, TopicConfig
from core.log.errors import LogClosedError

if TYPE_CHECKING:
    from core.log.log import PartitionLog

__all__ = ["LogMaintenance", "attempt"]

log = logging.getLogger(__name__)

FLUSH_CHECK_MS = 100  # how often flush.ms deadlines are checked, at most
_MIN_FLUSH_CHECK_MS = 10  # flush.ms=0 must not turn the thread into a busy loop

#: Returns (effective config, log) for every open partition; called on every pass.
Snapshot = Callable[[], "list[tuple[TopicConfig, PartitionLog]]"]


class LogMaintenance:
    """Runs maintenance passes over the logs a ``snapshot`` callable returns.

    Lifecycle: 1. construct; 2. ``start()`` for the background thread (or call ``run_pass``
    directly); 3. ``wake()`` after a config change so a new flush.ms takes effect at once;
    4. ``stop(timeout)`` (idempotent), which interrupts the sleep at once and lets a pass in
    progress finish its current log.

    ``clock`` (seconds since the epoch) gives the ``now_ms`` the logs see; the schedule itself
    runs on the monotonic clock, so a test clock never stalls or races the thread.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        clock: Callable[[], float] = time.time,
        retention_check_interval_ms: int = 300000,
        cleaner_backoff_ms: int = 15000,
        name: str = "ferry-log-maintenance",
    ):
        if retention_check_interval_ms <= 0 or cleaner_backoff_ms <= 0:
            raise ValueError(
                "retention_check_interval_ms and cleaner_backoff_ms must be positive, got "
                f"{retention_check_interval_ms} and {cleaner_backoff_ms}"
            )
        self._snapshot = snapshot
        self._clock = clock
        self._retention_interval_s = retention_check_interval_ms / 1000
        self._cleaner_backoff_s = cleaner_backoff_ms / 1000
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by stop() and wake(): recompute the schedule
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Recompute the schedule now (a topic with a new flush.ms may need it sooner)."""
        self._wake.set()

    def stop(self, timeout_s: float) -> bool:
        """Stop the thread; True if it ended within ``timeout_s``."""
        self._stop.set()
        self._wake.set()
        if self._thread.ident is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def run_pass(
        self, now_ms: int, *, retention: bool = True, compaction: bool = True, flush: bool = True
    ) -> None:
        """One pass over every log, on the calling thread."""
        for config, plog in self._snapshot():
            if self._stop.is_set():
                return
            if retention and config.delete:
                attempt(plog.enforce_retention, now_ms, what="retention", plog=plog)
            if compaction and config.compact:
                attempt(plog.compact, now_ms, what="compaction", plog=plog)
            if flush and config.flush_ms < LONG_MAX:
                attempt(plog.maybe_flush, now_ms, what="flush", plog=plog)

    def _run(self) -> None:
        monotonic = time.monotonic
        start = monotonic()
        next_retention = start + self._retention_interval_s
        next_cleaning = start + self._cleaner_backoff_s
        next_flush = start
        while not self._stop.is_set():
            flush_interval = self._flush_interval_s()
            due = min(next_retention, next_cleaning)
            if flush_interval is not None:
                due = min(due, next_flush)
            self._wake.wait(max(0.0, due - monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                return
            now = monotonic()
            retention, compaction = now >= next_retention, now >= next_cleaning
            flush = flush_interval is not None and now >= next_flush
            if not (retention or compaction or flush):
                continue  # woken early to recompute the schedule
            try:
                self.run_pass(int(self._clock() * 1000), retention=retention,
                              compaction=compaction, flush=flush)
            except Exception:
                # attempt() already isolates each log; this guards the snapshot itself.
                log.exception("log maintenance pass failed; retrying at the next interval")
            now = monotonic()
            if retention:
                next_retention = now + self._retention_interval_s
            if compaction:
                next_cleaning = now + self._cleaner_backoff_s
            if flush and flush_interval is not None:
                next_flush = now + flush_interval

    def _flush_interval_s(self) -> float | None:
        try:
            finite = [c.flush_ms for c, _ in self._snapshot() if c.flush_ms < LONG_MAX]
        except Exception:
            log.exception("cannot list logs for the flush schedule; retrying at the next pass")
            return None
        if not finite:
            return None
        return max(_MIN_FLUSH_CHECK_MS, min(FLUSH_CHECK_MS, *finite)) / 1000


def attempt(
    fn: Callable[..., object], *args: object, what: str, plog: PartitionLog
) -> Exception | None:
    """Call ``fn(*args)``; return None, or the exception it raised after logging it with the
    partition's name. One partition's failure must not stop work on the others."""
    try:
        fn(*args)
    except LogClosedError as exc:
        # The topic was deleted (or the manager closed) while a pass ran over a snapshot.
        log.debug("skipped %s of %s-%d, closed: %s", what, plog.topic, plog.partition, exc)
    except Exception as exc:
        log.exception("%s of %s-%d failed; other partitions are unaffected",
                      what, plog.topic, plog.partition)
        return exc
    return None
