"""``ferry connect distributed`` on ``embedded:`` as a subprocess: a one-worker cluster
that keeps its state in Kafka Connect's internal topics, so a restarted worker rebuilds
its connectors, and a clean stop exits 0."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import requests
from dist_cluster import WorkerProcess, wait_for
from metrics_scrape import scrape

from core.backends import OffsetSpec, TopicPartition, open_backend

pytestmark = [pytest.mark.integration]


def config_topic_keys(log_url: str) -> list[str]:
    with open_backend(log_url) as log:
        tp = TopicPartition("connect-configs", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        keys: list[str] = []
        at = 0
        while at < end:
            records = log.fetch({tp: at}, max_wait_ms=100)[tp].records
            keys += [(r.key or b"").decode() for r in records]
            at = records[-1].offset + 1 if records else end
        return keys


def test_one_worker_on_an_embedded_log_rebuilds_its_state_after_a_restart(
        tmp_path: Path) -> None:
    log_url = f"embedded:{tmp_path / 'data'}"
    config = tmp_path / "worker.properties"
    config.write_text("offset.storage.partitions=1\nstatus.storage.partitions=1\n"
                      "offset.flush.interval.ms=500\n")
    worker = WorkerProcess(tmp_path, "solo", log_url, "solo-group", config)
    worker.start()
    try:
        wait_for(worker.healthy, "the worker to be healthy", detail=worker.output)
        info = requests.get(worker.base + "/", timeout=10).json()
        # No broker formatted this directory: it has no cluster id (null, not the group).
        assert info["kafka_cluster_id"] is None
        response = requests.post(worker.base + "/connectors", timeout=30, json={
            "name": "gen", "config": {"connector.class": "datagen", "kafka.topic": "solo",
                                      "quickstart": "users", "tasks.max": "2",
                                      "rate": "20"}})
        assert response.status_code == 201, response.text

        def running() -> bool:
            status = requests.get(worker.base + "/connectors/gen/status", timeout=10).json()
            states = [status["connector"], *status["tasks"]]
            return len(status["tasks"]) == 2 and all(
                s["state"] == "RUNNING" and s["worker_id"] == worker.worker_id for s in states)

        wait_for(running, "gen RUNNING on the worker", detail=worker.output)
        # /metrics of a distributed worker: its rebalances, its tasks, their records.
        wait_for(lambda: scrape(worker.base).value(
            "kafka_connect_source_task_source_record_write_total", connector="gen",
            task="0") > 0, "gen's records in /metrics", detail=worker.output)
        metrics = scrape(worker.base)
        assert metrics.value("kafka_connect_worker_rebalance_completed_rebalances_total") >= 1
        assert metrics.value("kafka_connect_worker_rebalance_rebalancing") == 0
        assert metrics.value("kafka_connect_worker_task_count") == 2
        assert metrics.value("kafka_connect_connector_status", connector="gen", type="source",
                             status="running") == 1
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.proc.wait(30) == 0
        keys = config_topic_keys(log_url)
        for key in ("connector-gen", "task-gen-0", "task-gen-1", "commit-gen", "session-key"):
            assert key in keys, (key, keys)

        worker.start()  # same id, same log: everything comes back from the topics
        wait_for(worker.healthy, "the restarted worker to be healthy", detail=worker.output)
        wait_for(running, "gen RUNNING again after the restart", detail=worker.output)
        assert requests.get(worker.base + "/connectors", timeout=10).json() == ["gen"]
    finally:
        worker.stop()
