"""Connect's ``/metrics``: the worker's connectors and tasks under Strimzi's names.

Strimzi's ``kafka-connect-metrics.yaml`` turns Connect's MBeans into gauges: a status
string becomes a ``status`` label on a gauge of 1 (``kafka_connect_connector_status``,
``kafka_connect_connector_task_status``), every other attribute keeps its name with
``-`` as ``_`` (``source-record-poll-total`` of ``source-task-metrics`` ->
``kafka_connect_source_task_source_record_poll_total``). Everything is read at scrape time
from the herder (statuses) and this worker's tasks (``connect.runtime.task_metrics``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from connect.api.errors import NotFoundError
from connect.runtime.herder import Herder

__all__ = ["ConnectCollector"]

log = logging.getLogger(__name__)

_TASK_LABELS = ["connector", "task"]
#: (Strimzi name, TaskMetrics attribute, help): gauges per connector and task.
_TASK_VALUES = (
    ("kafka_connect_source_task_source_record_poll_total", "source_record_poll_total",
     "Records a source task's poll() returned"),
    ("kafka_connect_source_task_source_record_write_total", "source_record_write_total",
     "Records a source task wrote to the log"),
    ("kafka_connect_sink_task_sink_record_read_total", "sink_record_read_total",
     "Records a sink task read from the log"),
    ("kafka_connect_sink_task_sink_record_send_total", "sink_record_send_total",
     "Records handed to a sink task's put()"),
    ("kafka_connect_task_error_total_record_errors", "record_errors_total",
     "Record failures reported to the error handler"),
    ("kafka_connect_task_error_total_records_skipped", "records_skipped_total",
     "Failed records skipped (errors.tolerance=all)"),
    ("kafka_connect_task_error_deadletterqueue_produce_requests",
     "deadletterqueue_produce_requests", "Records written to the dead letter queue"),
    ("kafka_connect_task_error_deadletterqueue_produce_failures",
     "deadletterqueue_produce_failures", "Dead letter queue writes that failed"),
    ("ferry_connect_offset_commit_completion_total", "offset_commit_completion_total",
     "Offset commits that succeeded"),
    ("ferry_connect_offset_commit_failure_total", "offset_commit_failure_total",
     "Offset commits that failed"),
)


class ConnectCollector(Collector):
    """Collects one worker's metrics from ``herder`` (and its ``worker``, when it has one)."""

    def __init__(self, herder: Herder) -> None:
        self._herder = herder

    def collect(self) -> Iterator[Any]:
        herder = self._herder
        connector_status = GaugeMetricFamily(
            "kafka_connect_connector_status", "1 for the connector's current state",
            labels=["connector", "type", "status"])
        task_status = GaugeMetricFamily(
            "kafka_connect_connector_task_status", "1 for the task's current state",
            labels=["connector", "task", "status"])
        counts = {state: GaugeMetricFamily(
            f"kafka_connect_worker_connector_{state}_task_count",
            f"Tasks of the connector in state {state.upper()}", labels=["connector"])
            for state in ("running", "paused", "failed", "unassigned", "restarting")}
        total_tasks = GaugeMetricFamily("kafka_connect_worker_connector_total_task_count",
                                        "Tasks of the connector", labels=["connector"])
        names = _connectors(herder)
        for name in names:
            try:
                info = herder.connector_status(name)
            except NotFoundError:  # deleted during the scrape
                continue
            connector_status.add_metric([name, info.type, info.connector.state.lower()], 1)
            by_state = dict.fromkeys(counts, 0)
            for task in info.tasks:
                state = task.state.lower()
                task_status.add_metric([name, str(task.id), state], 1)
                if state in by_state:
                    by_state[state] += 1
            for state, family in counts.items():
                family.add_metric([name], by_state[state])
            total_tasks.add_metric([name], len(info.tasks))
        yield connector_status
        yield task_status
        yield from counts.values()
        yield total_tasks
        yield from _task_metrics(herder)
        yield from _rebalance_metrics(herder)


def _connectors(herder: Herder) -> list[str]:
    try:
        return list(herder.connectors())
    except Exception as exc:  # a herder still starting (or forwarding) shows no connectors
        log.debug("no connector list for /metrics: %s", exc)
        return []


def _task_metrics(herder: Herder) -> Iterator[GaugeMetricFamily]:
    worker = getattr(herder, "worker", None)
    tasks = dict(getattr(worker, "tasks", {}) or {})
    connectors = dict(getattr(worker, "connectors", {}) or {})
    yield GaugeMetricFamily("kafka_connect_worker_connector_count",
                            "Connectors running on this worker", value=len(connectors))
    yield GaugeMetricFamily("kafka_connect_worker_task_count", "Tasks running on this worker",
                            value=len(tasks))
    families = [(GaugeMetricFamily(name, documentation, labels=_TASK_LABELS), attribute)
                for name, attribute, documentation in _TASK_VALUES]
    commit_max = GaugeMetricFamily("kafka_connect_connector_task_offset_commit_max_time_ms",
                                   "Longest offset commit (ms)", labels=_TASK_LABELS)
    commit_avg = GaugeMetricFamily("kafka_connect_connector_task_offset_commit_avg_time_ms",
                                   "Mean offset commit time (ms)", labels=_TASK_LABELS)
    for task_id, task in sorted(tasks.items(), key=lambda item: (item[0].connector,
                                                                 item[0].task)):
        metrics = task.setup.metrics
        labels = [task_id.connector, str(task_id.task)]
        for family, attribute in families:
            family.add_metric(labels, getattr(metrics, attribute))
        done = metrics.offset_commit_completion_total
        commit_max.add_metric(labels, metrics.offset_commit_max_seconds * 1000)
        commit_avg.add_metric(labels, metrics.offset_commit_seconds_total * 1000 / done
                              if done else 0.0)
    yield from (family for family, _ in families)
    yield commit_max
    yield commit_avg


def _rebalance_metrics(herder: Herder) -> Iterator[GaugeMetricFamily]:
    completed = getattr(herder, "rebalances_completed", None)
    if completed is None:  # a standalone worker never rebalances
        return
    yield GaugeMetricFamily("kafka_connect_worker_rebalance_completed_rebalances_total",
                            "Rebalances this worker completed", value=completed)
    member = getattr(herder, "member", None)
    yield GaugeMetricFamily("kafka_connect_worker_rebalance_rebalancing",
                            "1 while a rebalance is in progress",
                            value=1 if getattr(member, "rebalancing", False) else 0)
    last = getattr(herder, "last_rebalance_at", None)
    yield GaugeMetricFamily("kafka_connect_worker_rebalance_time_since_last_rebalance_ms",
                            "Milliseconds since the last rebalance completed (-1: none yet)",
                            value=-1 if last is None else (time.monotonic() - last) * 1000)
