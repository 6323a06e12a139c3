"""What one task counts, for Connect's ``/metrics`` (``connect.rest.metrics``).

Kafka Connect's task MBeans (``source-task-metrics``, ``sink-task-metrics``,
``task-error-metrics``, the offset commit part of ``connector-task-metrics``) as plain
counters: the task's own thread adds to them, a scrape reads them; an integer read while
it is being added to is at worst one batch behind. Rates are left to Prometheus
(``rate()`` of the totals), as the Strimzi dashboards compute them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TaskMetrics", "TaskMetricsReporter"]


class TaskMetrics:
    """Counters of one task, across its restarts."""

    def __init__(self) -> None:
        self.source_record_poll_total = 0  # records returned by poll()
        self.source_record_write_total = 0  # records written to the log
        self.sink_record_read_total = 0  # records consumed from the log
        self.sink_record_send_total = 0  # records handed to put()
        self.offset_commit_completion_total = 0
        self.offset_commit_failure_total = 0
        self.offset_commit_seconds_total = 0.0
        self.offset_commit_max_seconds = 0.0
        self.record_errors_total = 0  # failures reported to the error handler
        self.records_skipped_total = 0  # of those, tolerated (errors.tolerance=all)
        self.deadletterqueue_produce_requests = 0
        self.deadletterqueue_produce_failures = 0

    @contextmanager
    def offset_commit(self) -> Iterator[None]:
        """Time one offset commit; an exception counts as a failed commit."""
        started = time.monotonic()
        try:
            yield
        except BaseException:
            self.offset_commit_failure_total += 1
            raise
        elapsed = time.monotonic() - started
        self.offset_commit_completion_total += 1
        self.offset_commit_seconds_total += elapsed
        self.offset_commit_max_seconds = max(self.offset_commit_max_seconds, elapsed)


class TaskMetricsReporter:
    """An error reporter (first in the list) that counts what the handler reports."""

    def __init__(self, metrics: TaskMetrics, tolerates_all: bool) -> None:
        self._metrics = metrics
        self._tolerates_all = tolerates_all

    def report(self, context: object) -> None:
        self._metrics.record_errors_total += 1
        if self._tolerates_all:
            self._metrics.records_skipped_total += 1
