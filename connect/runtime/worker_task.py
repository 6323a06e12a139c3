"""WorkerTask: what source and sink tasks share in the worker: their own thread, status
reports, pause/stop signals, and automatic restart with exponential backoff.

Restart (Ferry, beyond Kafka): when a task fails its status becomes FAILED with the trace;
with ``errors.task.restart.enable`` (default true) the same thread waits
``errors.task.restart.backoff.initial.ms`` (doubling to ``...backoff.max.ms``), builds a new
task instance and starts again; the status stays FAILED until the new instance is RUNNING.
The backoff resets once an attempt has run for longer than the current backoff.

Logging: a failure's trace is logged once; each retry that fails the same way (same
exception type raised through the same code path, within a minute of its start) logs one
WARNING line with the error and the next delay, so a task failing every second for hours
does not fill the log with identical traces. A different failure logs its trace.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connect.runtime.connector_config import ErrorConfig
from connect.runtime.herder import ConnectorTaskId
from connect.runtime.secrets import scrub
from connect.runtime.task_metrics import TaskMetrics
from core.backends import LogBackend
from core.telemetry import log_context

__all__ = ["StatusListener", "TaskSetup", "WorkerTask"]

log = logging.getLogger(__name__)

#: A failure at the same place as the previous one, after an attempt shorter than this
#: (or than the backoff), is the same failure again: one log line, not another trace.
_SAME_FAILURE_S = 60.0

#: ``(id, state, trace)``: the herder records task status changes through this.
StatusListener = Callable[[ConnectorTaskId, str, str | None], None]


@dataclass(frozen=True)
class TaskSetup:
    """What every task run needs, built by the worker."""

    id: ConnectorTaskId
    props: dict[str, str]  # resolved: placeholders replaced, never logged
    errors: ErrorConfig
    status: StatusListener
    flush_interval_ms: int
    backend: LogBackend
    task_class: type
    #: Builds fresh ``(key_converter, value_converter, header_converter, chain)``.
    build_pipeline: Callable[[], tuple[Any, Any, Any, Any]]
    #: Builds the error operator's reporters (log, dead letter queue) for one attempt.
    build_reporters: Callable[[], list[Any]]
    #: Told the topics the task uses (KIP-558 active topics); may be called repeatedly.
    on_topic: Callable[[str], None] = lambda topic: None
    #: Secret values of ``props``, hidden from failure traces (status and log).
    secrets: tuple[str, ...] = ()
    #: What the task counts for /metrics (kept across the task's restarts).
    metrics: TaskMetrics = field(default_factory=TaskMetrics)


class WorkerTask(ABC):
    """Runs one task on its own daemon thread. ``start``, ``pause``, ``resume``, ``stop``
    and ``join`` are called by the worker from any thread."""

    def __init__(self, setup: TaskSetup) -> None:
        self.id = setup.id
        self.setup = setup
        self._stopping = threading.Event()
        self._resumed = threading.Event()
        self._resumed.set()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"task-{self.id.connector}-{self.id.task}")
        self.abandoned = False
        #: The last attempt failed and no new one is RUNNING yet: pause and resume leave
        #: the FAILED status alone (Kafka: a failed task stays FAILED until restarted).
        self.failed = False

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        self._thread.start()

    def pause(self) -> None:
        self._resumed.clear()
        if not self.failed:
            self.setup.status(self.id, "PAUSED", None)

    def resume(self) -> None:
        self._resumed.set()
        if not self.failed:
            self.setup.status(self.id, "RUNNING", None)

    @property
    def paused(self) -> bool:
        return not self._resumed.is_set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self) -> None:
        """Signal the stop; the thread finishes its round, commits and exits."""
        self._stopping.set()
        self._resumed.set()
        self.on_stop_requested()

    def join(self, timeout_s: float) -> bool:
        """Wait for the thread; False (and the task marked abandoned) if it is stuck."""
        if self._thread.ident is None:
            return True
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self.abandoned = True
            log.warning("task %s did not stop within %.1fs; abandoning its thread",
                        self.id, timeout_s)
            return False
        return True

    def wait_if_paused(self) -> None:
        """Block while paused (woken by resume or stop)."""
        while not self._resumed.wait(0.5):
            pass

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        # Every line the task's thread logs names it, as Connect's MDC does (KIP-449).
        with log_context(connector=self.id.connector, task=self.id.task):
            self._run_attempts()

    def _run_attempts(self) -> None:
        cfg = self.setup.errors
        backoff = cfg.restart_backoff_initial_ms / 1000
        #: Where the last attempt failed; a retry failing the same way logs one line, not
        #: its whole trace again (a task failing every second would flood the log).
        last_failure: tuple[Any, ...] | None = None
        attempt = 0
        while not self._stopping.is_set():
            began = time.monotonic()
            attempt += 1
            repeated, summary = False, ""
            try:
                self.execute()
                if not self._stopping.is_set():
                    continue  # execute only returns early when stopping
                self.setup.status(self.id, "UNASSIGNED", None)
                return
            except Exception as exc:  # top of the task thread: any failure fails the task
                raw = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                trace = scrub(raw, self.setup.secrets)
                failure = _failure_site(exc)
                ran = time.monotonic() - began
                repeated = failure == last_failure and ran < max(backoff, _SAME_FAILURE_S)
                if not repeated and trace == raw:
                    log.error("task %s failed: %s", self.id, exc, exc_info=exc)
                elif not repeated:  # the trace quotes a secret: log the scrubbed text
                    log.error("task %s failed: %s\n%s", self.id,
                              scrub(str(exc), self.setup.secrets), trace.rstrip())
                last_failure = failure
                summary = scrub(_one_line(exc), self.setup.secrets)
                self.failed = True
                self.setup.status(self.id, "FAILED", trace)
            if not cfg.restart_enable or self._stopping.is_set():
                return
            if time.monotonic() - began > backoff:
                backoff = cfg.restart_backoff_initial_ms / 1000
                attempt = 1
            if repeated:
                log.warning("task %s failed again the same way (%s); restart %d in %.3fs",
                            self.id, summary, attempt, backoff)
            else:
                log.info("restarting task %s in %.3fs", self.id, backoff)
            if self._stopping.wait(backoff):
                return
            backoff = min(backoff * 2, cfg.restart_backoff_max_ms / 1000)

    def log_exception(self, level: int, message: str, exc: BaseException) -> None:
        """Log ``message`` (which names this task) with ``exc``'s trace, the task's secrets
        hidden: a plugin's error (or one chained to it) may quote a password."""
        raw = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        trace = scrub(raw, self.setup.secrets)
        if trace == raw:
            log.log(level, message, exc_info=exc)
        else:
            log.log(level, "%s\n%s", message, trace.rstrip())

    def report_running(self) -> None:
        self.failed = False
        self.setup.status(self.id, "PAUSED" if self.paused else "RUNNING", None)

    @abstractmethod
    def execute(self) -> None:
        """One attempt: build the task, run it until ``stopping``, clean up. Raising
        fails the attempt."""

    @abstractmethod
    def on_stop_requested(self) -> None:
        """Hook called on the stopping thread (source tasks call ``task.stop()`` here)."""


def _failure_site(exc: BaseException) -> tuple[Any, ...]:
    """The exception's type and the code path it took: equal for the same failure even
    when its message carries changing details (a timestamp, an attempt number)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return (type(exc).__qualname__, tuple((f.filename, f.lineno) for f in frames))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
