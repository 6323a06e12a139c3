"""A distributed worker cut off from its log stops its tasks (no zombie keeps running)
and runs them again once the log is back: an in-process worker on ``kafka://`` whose
``ferry broker`` subprocess is SIGKILLed, then started again on the same port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from broker_process import BrokerProcess, free_port
from polling import wait_for

from connect.cli import DistributedWorker

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WAIT_S = 60.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "broker-data", {"group.initial.rebalance.delay.ms": "0",
                                                "offsets.topic.num.partitions": "2"},
                      tmp_path / "broker.log")
    b.start()
    try:
        yield b
    finally:
        b.stop()


def test_worker_cut_off_from_the_broker_stops_its_tasks_and_recovers(
        broker: BrokerProcess) -> None:
    worker = DistributedWorker(f"kafka://{broker.bootstrap}", {
        "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
        "offset.storage.partitions": "1", "status.storage.partitions": "1",
        "offset.flush.interval.ms": "500", "task.shutdown.graceful.timeout.ms": "2000",
    }, group_id="cutoff", rest_listener=f"127.0.0.1:{free_port()}")
    worker.start()
    try:
        base = worker.url

        def tasks_running() -> bool:
            response = requests.get(base + "/connectors/gen/status", timeout=10)
            return response.status_code == 200 and [
                t["state"] for t in response.json()["tasks"]] == ["RUNNING", "RUNNING"]

        wait_for(lambda: requests.get(base + "/health", timeout=10).status_code == 200,
                 "the worker to be healthy", timeout=WAIT_S)
        response = requests.post(base + "/connectors", timeout=30, json={
            "name": "gen", "config": {
                "connector.class": "datagen", "kafka.topic": "cut", "quickstart": "users",
                "tasks.max": "2", "rate": "50", "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1"}})
        assert response.status_code == 201, response.text
        wait_for(tasks_running, "two RUNNING tasks", timeout=WAIT_S)
        assert len(worker.herder.work.running().tasks) == 2

        broker.kill()
        wait_for(lambda: worker.herder.work.running().is_empty(),
                 "the cut-off worker to stop its connector and tasks", timeout=20)
        assert not worker.herder.worker.tasks, "no task thread keeps running"
        assert requests.get(base + "/health", timeout=10).status_code == 500

        broker.start()
        wait_for(lambda: len(worker.herder.work.running().tasks) == 2,
                 "the worker to run its tasks again", timeout=WAIT_S)
        wait_for(tasks_running, "the tasks RUNNING again", timeout=WAIT_S)
        wait_for(lambda: requests.get(base + "/health", timeout=10).status_code == 200,
                 "the worker to be healthy again", timeout=WAIT_S)
    finally:
        worker.stop()
