"""A task that keeps failing logs its trace once, then one line per retry (issue: 1,806
log lines in 16 minutes from one failing task restarted with backoff). A real standalone
worker on ``embedded:``; the log is what ``caplog`` captures from the runtime."""

from __future__ import annotations

import logging

import pytest
from rt_test_connectors import REC, Harness, wait_for

pytestmark = pytest.mark.integration

RUNTIME_LOGGER = "connect.runtime"


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path / "log")
    yield h
    h.close()


def _task_records(caplog: pytest.LogCaptureFixture, task: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name.startswith(RUNTIME_LOGGER) and task in r.getMessage()]


def test_a_task_failing_on_every_start_logs_one_trace_then_one_line_per_retry(
        harness, caplog) -> None:
    caplog.set_level(logging.INFO, logger=RUNTIME_LOGGER)
    harness.create("broken", {"connector.class": "ScriptedSource", "fail.tasks": "0",
                              "errors.task.restart.backoff.initial.ms": "10",
                              "errors.task.restart.backoff.max.ms": "40"})
    wait_for(lambda: REC.starts("broken") >= 8, "eight failed starts of broken-0")
    harness.herder.delete_connector("broken")
    records = _task_records(caplog, "broken-0")
    traces = [r for r in records if r.exc_info]
    assert len(traces) == 1, [r.getMessage() for r in traces]
    assert "always fails" in str(traces[0].exc_info[1])
    again = [r for r in records if "failed again the same way" in r.getMessage()]
    starts = REC.starts("broken")
    # Every failed start after the first is exactly one line, naming the error.
    assert len(again) >= starts - 2, (starts, [r.getMessage() for r in records])
    assert all("RuntimeError: task broken-0 always fails" in r.getMessage() for r in again)
    assert len(records) <= starts + 3, [r.getMessage() for r in records]


def test_a_different_failure_logs_its_own_trace(harness, caplog) -> None:
    """Two starts fail in the connector's start code (``fail.starts``), then every start
    fails the other way (``fail.tasks``): two traces, whatever the number of retries."""
    caplog.set_level(logging.INFO, logger=RUNTIME_LOGGER)
    harness.create("twice", {"connector.class": "ScriptedSource", "fail.starts": "2",
                             "fail.tasks": "0",
                             "errors.task.restart.backoff.initial.ms": "10",
                             "errors.task.restart.backoff.max.ms": "40"})
    wait_for(lambda: REC.starts("twice") >= 6, "six failed starts of twice-0")
    harness.herder.delete_connector("twice")
    traces = [r for r in _task_records(caplog, "twice-0") if r.exc_info]
    assert [str(r.exc_info[1]) for r in traces] == [
        "scripted start failure 1 of twice-0", "task twice-0 always fails"]
