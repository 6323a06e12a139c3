"""One distributed worker on an ``embedded:`` log, over its REST API: the herder's rules
(validation, target states, KIP-745 restarts, offsets of STOPPED connectors, config
providers never leaking, signed internal requests) as a one-worker cluster has them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dist_herder_harness import (
    LocalCluster,
    call,
    fail,
    running,
    source,
    starts,
    status,
    task_props,
    wait_for,
)

from connect.cli import DistributedWorker
from connect.runtime.distributed.local_work import OwnedOffsetStore
from connect.runtime.distributed.session_keys import signature_headers
from connect.runtime.server_info import package_version
from core.backends import OffsetSpec, TopicPartition, open_backend


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path, **{"config.providers": "env"})
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def worker(cluster: LocalCluster) -> DistributedWorker:
    return cluster.add()


def test_connector_lifecycle_on_one_worker(worker: DistributedWorker) -> None:
    base = worker.url
    code, info = call(base, "GET", "/")
    # An embedded directory no broker has formatted has no cluster id: null, not made up.
    assert code == 200 and info["kafka_cluster_id"] is None
    assert info["version"] == package_version()
    code, body = call(base, "POST", "/connectors", {"name": "t", "config": source(tasks=2)})
    assert code == 201, body
    assert call(base, "POST", "/connectors", {"name": "t", "config": source()})[0] == 409
    found = wait_for(lambda: running(base, "t", 2), "t RUNNING with two tasks")
    assert {found["connector"]["worker_id"], *(t["worker_id"] for t in found["tasks"])} == {
        worker.worker_id}
    assert found["type"] == "source"
    assert [t["id"] for t in call(base, "GET", "/connectors/t/tasks")[1]] == [
        {"connector": "t", "task": 0}, {"connector": "t", "task": 1}]

    # An invalid config is refused, naming the key; nothing is written.
    code, body = call(base, "PUT", "/connectors/t/config",
                      {**source(), "tasks.max": "zero"})
    assert code == 400 and "tasks.max" in body["message"]

    # A new config restarts the tasks with it (even though the connector gives the same
    # task configs for the unchanged keys).
    before = starts("t", 0)
    code, body = call(base, "PUT", "/connectors/t/config", source(tasks=2, extra="1"))
    assert code == 200, body
    wait_for(lambda: task_props("t", 0).get("extra") == "1", "task 0 restarted with extra=1")
    assert starts("t", 0) > before
    code, body = call(base, "PATCH", "/connectors/t/config", {"extra": None, "tasks.max": "3"})
    assert code == 200 and "extra" not in body["config"]
    wait_for(lambda: running(base, "t", 3), "three tasks after the patch")

    # Target states.
    assert call(base, "PUT", "/connectors/t/pause")[0] == 202
    wait_for(lambda: (s := status(base, "t")) and {x["state"] for x in s["tasks"]} == {
        "PAUSED"} and s["connector"]["state"] == "PAUSED", "t PAUSED")
    assert call(base, "PUT", "/connectors/t/resume")[0] == 202
    wait_for(lambda: running(base, "t", 3), "t RUNNING again")
    assert call(base, "PUT", "/connectors/t/stop")[0] == 204
    wait_for(lambda: (s := status(base, "t")) and s["connector"]["state"] == "STOPPED"
             and s["tasks"] == [], "t STOPPED without tasks")
    assert call(base, "GET", "/connectors/t/tasks") == (200, [])
    assert call(base, "PUT", "/connectors/t/resume")[0] == 202
    wait_for(lambda: running(base, "t", 3), "t RUNNING after STOPPED")

    # Deleted: gone, and so are its statuses.
    assert call(base, "DELETE", "/connectors/t")[0] == 204
    for path in ("/connectors/t", "/connectors/t/status", "/connectors/t/tasks"):
        assert call(base, "GET", path)[0] == 404, path
    assert call(base, "GET", "/connectors") == (200, [])
    assert call(base, "DELETE", "/connectors/t")[0] == 404


def test_restart_follows_kip_745(worker: DistributedWorker) -> None:
    base = worker.url
    assert call(base, "POST", "/connectors", {"name": "r", "config": source(tasks=2)})[0] == 201
    wait_for(lambda: running(base, "r", 2), "r RUNNING")
    fail("r", 1)
    wait_for(lambda: (s := status(base, "r")) and s["tasks"][1]["state"] == "FAILED",
             "task 1 FAILED")
    assert "told to fail" in status(base, "r")["tasks"][1]["trace"]  # type: ignore[index]
    zero, one = starts("r", 0), starts("r", 1)
    fail("r", 1, failing=False)
    code, plan = call(base, "POST", "/connectors/r/restart?includeTasks=true&onlyFailed=true")
    assert code == 202
    assert plan["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in plan["tasks"]] == ["RUNNING", "RESTARTING"]
    wait_for(lambda: running(base, "r", 2) and starts("r", 1) == one + 1, "task 1 restarted")
    assert starts("r", 0) == zero, "only the failed task restarts"
    # Without flags only the connector instance restarts (204); its tasks keep running.
    assert call(base, "POST", "/connectors/r/restart")[0] == 204
    assert call(base, "POST", "/connectors/r/tasks/0/restart")[0] == 204
    wait_for(lambda: starts("r", 0) == zero + 1, "task 0 restarted on its own")
    assert starts("r", 1) == one + 1
    assert call(base, "POST", "/connectors/r/tasks/7/restart")[0] == 404
    assert call(base, "POST", "/connectors/nope/restart")[0] == 404


def test_offsets_change_only_when_stopped(worker: DistributedWorker) -> None:
    base = worker.url
    assert call(base, "POST", "/connectors", {"name": "o", "config": source(tasks=1)})[0] == 201
    wait_for(lambda: call(base, "GET", "/connectors/o/offsets")[1]["offsets"],
             "a committed source offset")
    change = {"offsets": [{"partition": {"task": 0}, "offset": {"n": 1000}}]}
    code, body = call(base, "PATCH", "/connectors/o/offsets", change)
    assert code == 400 and "STOPPED" in body["message"]
    assert call(base, "PUT", "/connectors/o/stop")[0] == 204
    code, body = call(base, "PATCH", "/connectors/o/offsets", change)
    assert code == 200, body
    assert "altered successfully" in body["message"]
    assert call(base, "GET", "/connectors/o/offsets")[1]["offsets"] == [
        {"partition": {"task": 0}, "offset": {"n": 1000}}]
    code, body = call(base, "DELETE", "/connectors/o/offsets")
    assert code == 200 and "reset successfully" in body["message"]
    assert call(base, "GET", "/connectors/o/offsets")[1]["offsets"] == []


def test_config_provider_values_never_reach_the_config_topic_or_rest(
        cluster: LocalCluster, worker: DistributedWorker, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("DIST_SECRET", "s3cr3t-value")
    base = worker.url
    config = source(tasks=1, password="${env:DIST_SECRET}")
    assert call(base, "POST", "/connectors", {"name": "p", "config": config})[0] == 201
    wait_for(lambda: running(base, "p", 1), "p RUNNING")
    assert task_props("p", 0)["password"] == "s3cr3t-value"  # the task sees the value
    assert call(base, "GET", "/connectors/p/config")[1]["password"] == "${env:DIST_SECRET}"
    tasks = call(base, "GET", "/connectors/p/tasks")[1]
    assert tasks[0]["config"]["password"] == "${env:DIST_SECRET}"
    with open_backend(cluster.log_url) as log:
        tp = TopicPartition("connect-configs", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        raw = b"".join((r.value or b"") for r in log.fetch({tp: 0})[tp].records)
        assert end > 0 and b"${env:DIST_SECRET}" in raw
        assert b"s3cr3t-value" not in raw


def test_internal_task_configs_need_the_session_key(worker: DistributedWorker) -> None:
    base = worker.url
    assert call(base, "POST", "/connectors", {"name": "i", "config": source(tasks=1)})[0] == 201
    wait_for(lambda: running(base, "i", 1), "i RUNNING")
    configs = [{**source(tasks=2), "name": "i", "task.index": str(n), "pushed": "yes"}
               for n in range(2)]
    body = json.dumps(configs).encode()
    plain = {"Content-Type": "application/json"}
    code, answer = call(base, "POST", "/connectors/i/tasks", data=body, headers=plain)
    assert code == 400 and "missing required signature" in answer["message"]
    forged = {**plain, "X-Connect-Authorization": "AAAA",
              "X-Connect-Request-Signature-Algorithm": "HmacSHA256"}
    code, answer = call(base, "POST", "/connectors/i/tasks", data=body, headers=forged)
    assert code == 403 and answer["message"] == "Internal request contained invalid signature."
    key = worker.herder.config_store.snapshot().session_key
    assert key is not None and key.algorithm == "HmacSHA256" and len(key.key) == 32
    signed = {**plain, **signature_headers(key, "HmacSHA256", body)}
    code, answer = call(base, "POST", "/connectors/i/tasks", data=body, headers=signed)
    assert code == 204, answer
    # The leader wrote them: two tasks, the pushed configs.
    wait_for(lambda: task_props("i", 1).get("pushed") == "yes", "the pushed task configs run")
    # Standalone-style misuse: a body that is not a list of configs.
    code, answer = call(base, "POST", "/connectors/i/tasks", body={"not": "a list"})
    assert code == 400


def test_offsets_of_tasks_not_running_here_are_dropped(worker: DistributedWorker) -> None:
    offsets = worker.herder.worker.offsets
    assert isinstance(offsets, OwnedOffsetStore)
    offsets.write("ghost", {'{"task":0}': ({"task": 0}, {"n": 5})})
    assert offsets.get("ghost", {"task": 0}) is None
    offsets.unguarded.write("ghost", {'{"task":0}': ({"task": 0}, {"n": 5})})
    assert offsets.get("ghost", {"task": 0}) == {"n": 5}  # one state, two doors
