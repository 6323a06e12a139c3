"""Error handling of a task's record pipeline: retry, tolerate, report (Kafka's
RetryWithToleranceOperator, KIP-298).

Each step of a record's way (convert, transform, put ...) runs through ``execute``. A
``RetriableError`` is retried with exponential backoff for up to ``errors.retry.timeout``;
then, or for any other error, ``errors.tolerance=none`` raises ``ToleranceExceededError``
(the task fails) and ``all`` reports the failure (log, dead letter queue) and returns
``SKIPPED`` so the record is dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from connect.api.errors import ConnectError, RetriableError
from connect.runtime.connector_config import ErrorConfig
from connect.transforms.chain import PredicatedTransformation

__all__ = ["SKIPPED", "ErrorReporter", "ProcessingContext", "RetryWithToleranceOperator",
           "Stage", "ToleranceExceededError"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class Stage(StrEnum):
    """Where in the pipeline an error happened; Kafka's names (DLQ headers carry them)."""

    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


class ToleranceExceededError(ConnectError):
    """An error the connector's ``errors.tolerance`` does not tolerate; fails the task."""


class _Skipped:
    def __repr__(self) -> str:
        return "SKIPPED"


#: What ``execute`` returns when a tolerated error dropped the record.
SKIPPED: Any = _Skipped()


@dataclass
class ProcessingContext:
    """One failure: the record in its form at the failed stage, and where it failed.
    ``consumed`` is the raw Kafka record of a sink (topic, partition, offset, key, value,
    headers); ``source_record`` the SourceRecord of a source task."""

    stage: Stage
    executing_class: str
    error: BaseException
    consumed: Any = None
    source_record: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class ErrorReporter(Protocol):
    """Receives tolerated failures (the log reporter, the dead letter queue)."""

    def report(self, context: ProcessingContext) -> None: ...


class RetryWithToleranceOperator:
    """Runs pipeline steps for one task; used from the task's thread only.
    ``stop_event`` interrupts retry waits when the task stops."""

    def __init__(self, config: ErrorConfig, reporters: list[ErrorReporter],
                 stop_event: threading.Event) -> None:
        self._config = config
        self._reporters = reporters
        self._stop = stop_event
        self.errors_total = 0

    @property
    def tolerates_all(self) -> bool:
        return self._config.tolerance_all

    def execute(self, stage: Stage, executing: object, fn: Callable[[], T], *,
                consumed: Any = None, source_record: Any = None) -> T:
        """``fn()``, retried and tolerated as configured; ``SKIPPED`` on a tolerated error."""
        try:
            return self._with_retry(fn)
        except Exception as exc:  # every error of a plugin step is handled the same way
            return self._give_up(stage, executing, exc, consumed, source_record)

    def failed(self, stage: Stage, executing: object, error: Exception, fn: Callable[[], T],
               *, consumed: Any = None, source_record: Any = None) -> T:
        """What ``execute`` would have returned had ``fn``'s first attempt raised ``error``:
        for callers that make that first attempt inline, without a closure, and come
        here only when it fails. Retries and reports count that attempt as made."""
        try:
            return self._with_retry(fn, error)
        except Exception as exc:  # every error of a plugin step is handled the same way
            return self._give_up(stage, executing, exc, consumed, source_record)

    def _give_up(self, stage: Stage, executing: object, exc: Exception, consumed: Any,
                 source_record: Any) -> Any:
        name = _executing_class(executing, exc)
        self.report(ProcessingContext(stage, name, exc, consumed, source_record))
        if not self._config.tolerance_all:
            raise ToleranceExceededError(
                f"Tolerance exceeded in error handler at stage {stage} ({name}): "
                f"{type(exc).__name__}: {exc}") from exc
        return SKIPPED

    def report(self, context: ProcessingContext) -> None:
        """Send a failure to every reporter (each only logs its own failures)."""
        self.errors_total += 1
        for reporter in self._reporters:
            try:
                reporter.report(context)
            except Exception:  # a broken DLQ must not hide the original error
                log.error("error reporter %r failed", reporter, exc_info=True)

    def _with_retry(self, fn: Callable[[], T], first_error: Exception | None = None) -> T:
        """``fn()``, retried on ``RetriableError``; ``first_error`` is what an attempt the
        caller already made raised."""
        timeout = self._config.retry_timeout_ms
        deadline = None if timeout < 0 else time.monotonic() + timeout / 1000
        delay = 0.3
        while True:
            try:
                if first_error is not None:
                    error, first_error = first_error, None
                    raise error
                return fn()
            except RetriableError:
                now = time.monotonic()
                if (deadline is not None and now >= deadline) or self._stop.is_set():
                    raise
                wait = min(delay, self._config.retry_delay_max_ms / 1000)
                if deadline is not None:
                    wait = min(wait, deadline - now)
                self._stop.wait(max(wait, 0))
                delay *= 2


def _executing_class(executing: object, error: BaseException) -> str:
    """The class name the DLQ's ``class.name`` and the log show. For a transformation
    chain that is the transformation that raised, as in Kafka, found in the traceback
    (only ever walked for a failure, so the chain's fast path stays untouched)."""
    if isinstance(executing, str):
        return executing
    found: object = executing
    tb = error.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, PredicatedTransformation):
            found = owner.transformation
        tb = tb.tb_next
    return type(found).__qualname__


class LogReporter:
    """``errors.log.enable``: one ERROR line per failure (the record only with
    ``errors.log.include.messages``)."""

    def __init__(self, task_id: str, include_messages: bool) -> None:
        self._task_id = task_id
        self._include = include_messages

    def report(self, context: ProcessingContext) -> None:
        record = context.consumed if context.consumed is not None else context.source_record
        shown = f" record {record!r}" if self._include and record is not None else ""
        log.error("Error encountered in task %s at stage %s executing %s:%s",
                  self._task_id, context.stage, context.executing_class, shown,
                  exc_info=context.error)
