"""Tests for the maintenance scheduler (core.log.maintenance), driven over recording logs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from core.log.config import TopicConfig
from core.log.errors import LogClosedError
from core.log.maintenance import LogMaintenance


class RecordingLog:
    """Stands in for a PartitionLog: records maintenance calls, optionally failing."""

    def __init__(self, topic: str, fail_with: BaseException | None = None):
        self.topic = topic
        self.partition = 0
        self.calls: list[tuple[str, int]] = []
        self.fail_with = fail_with
        self.changed = threading.Condition()

    def _record(self, what: str, now_ms: int) -> None:
        with self.changed:
            self.calls.append((what, now_ms))
            self.changed.notify_all()
        if self.fail_with is not None:
            raise self.fail_with

    def enforce_retention(self, now_ms: int) -> int:
        self._record("retention", now_ms)
        return 0

    def compact(self, now_ms: int) -> bool:
        self._record("compact", now_ms)
        return False

    def maybe_flush(self, now_ms: int) -> None:
        self._record("flush", now_ms)

    def count(self, what: str) -> int:
        with self.changed:
            return sum(1 for w, _ in self.calls if w == what)

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout_s)


DELETE = TopicConfig()
COMPACT = TopicConfig(cleanup_policy=("compact",))
BOTH = TopicConfig(cleanup_policy=("compact", "delete"))
FLUSHED = TopicConfig(flush_ms=5)


def test_run_pass_dispatches_by_policy() -> None:
    logs = {name: RecordingLog(name) for name in ("delete", "compact", "both", "flushed")}
    configs = {"delete": DELETE, "compact": COMPACT, "both": BOTH, "flushed": FLUSHED}
    snapshot: list[tuple[TopicConfig, Any]] = [(configs[n], logs[n]) for n in logs]
    LogMaintenance(lambda: snapshot, clock=lambda: 12.5).run_pass(1000)
    assert logs["delete"].calls == [("retention", 1000)]
    assert logs["compact"].calls == [("compact", 1000)]
    assert logs["both"].calls == [("retention", 1000), ("compact", 1000)]
    assert logs["flushed"].calls == [("retention", 1000), ("flush", 1000)]


def test_run_pass_can_select_work() -> None:
    plog = RecordingLog("t")
    maintenance = LogMaintenance(lambda: [(BOTH, plog)])
    maintenance.run_pass(7, retention=False, compaction=True, flush=False)
    assert plog.calls == [("compact", 7)]


def test_a_failing_log_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    bad = RecordingLog("bad", fail_with=OSError("disk on fire"))
    closed = RecordingLog("deleted-meanwhile", fail_with=LogClosedError("closed"))
    good = RecordingLog("good")
    maintenance = LogMaintenance(lambda: [(DELETE, bad), (DELETE, closed), (DELETE, good)])
    with caplog.at_level(logging.ERROR, logger="core.log.maintenance"):
        maintenance.run_pass(1)
    assert good.calls == [("retention", 1)]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == ["retention of bad-0 failed; other partitions are unaffected"]


def test_background_thread_runs_each_task_on_its_interval() -> None:
    retained, compacted, flushed = RecordingLog("r"), RecordingLog("c"), RecordingLog("f")
    snapshot = [(DELETE, retained), (COMPACT, compacted), (FLUSHED, flushed)]
    maintenance = LogMaintenance(
        lambda: snapshot, clock=lambda: 42.0, retention_check_interval_ms=20,
        cleaner_backoff_ms=20,
    )
    maintenance.start()
    try:
        assert retained.wait_for(lambda: retained.count("retention") >= 3)
        assert compacted.wait_for(lambda: compacted.count("compact") >= 3)
        assert flushed.wait_for(lambda: flushed.count("flush") >= 3)
    finally:
        assert maintenance.stop(10)
    assert all(now_ms == 42000 for _, now_ms in retained.calls)


def test_background_thread_survives_failures() -> None:
    bad = RecordingLog("bad", fail_with=RuntimeError("boom"))
    good = RecordingLog("good")
    maintenance = LogMaintenance(lambda: [(DELETE, bad), (DELETE, good)],
                                 retention_check_interval_ms=10)
    maintenance.start()
    try:
        assert good.wait_for(lambda: good.count("retention") >= 3)
        assert bad.count("retention") >= 3
    finally:
        assert maintenance.stop(10)


def test_a_failing_snapshot_does_not_kill_the_thread() -> None:
    plog = RecordingLog("t")
    failures = [RuntimeError("first pass fails")]

    def snapshot() -> list[tuple[TopicConfig, Any]]:
        if failures:
            raise failures.pop()
        return [(DELETE, plog)]

    maintenance = LogMaintenance(snapshot, retention_check_interval_ms=10)
    maintenance.start()
    try:
        assert plog.wait_for(lambda: plog.count("retention") >= 1)
    finally:
        assert maintenance.stop(10)


def test_stop_interrupts_a_long_sleep_and_is_idempotent() -> None:
    plog = RecordingLog("t")
    maintenance = LogMaintenance(lambda: [(DELETE, plog)],
                                 retention_check_interval_ms=3_600_000,
                                 cleaner_backoff_ms=3_600_000)
    maintenance.start()
    # The thread is asleep for an hour; stop() must still end it at once.
    assert maintenance.stop(5)
    assert maintenance.stop(5)
    assert plog.calls == []


def test_wake_picks_up_a_new_flush_ms() -> None:
    plog = RecordingLog("t")
    config = [DELETE]
    maintenance = LogMaintenance(lambda: [(config[0], plog)],
                                 retention_check_interval_ms=3_600_000,
                                 cleaner_backoff_ms=3_600_000)
    maintenance.start()
    try:
        config[0] = FLUSHED
        maintenance.wake()
        assert plog.wait_for(lambda: plog.count("flush") >= 2)
    finally:
        assert maintenance.stop(10)


def test_stop_before_start_and_bad_intervals() -> None:
    assert LogMaintenance(list).stop(1)
    with pytest.raises(ValueError, match="must be positive"):
        LogMaintenance(list, retention_check_interval_ms=0)


def test_stop_wait_is_bounded_while_a_pass_runs() -> None:
    entered, release = threading.Event(), threading.Event()

    class SlowLog(RecordingLog):
        def enforce_retention(self, now_ms: int) -> int:
            entered.set()
            release.wait(10)
            return 0

    maintenance = LogMaintenance(lambda: [(DELETE, SlowLog("slow"))],
                                 retention_check_interval_ms=1)
    maintenance.start()
    try:
        assert entered.wait(10)
        assert maintenance.stop(0.05) is False  # still inside enforce_retention
    finally:
        release.set()
    assert maintenance.stop(10)
