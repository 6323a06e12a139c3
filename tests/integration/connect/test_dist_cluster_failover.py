"""Three ``ferry connect distributed`` workers on a ``ferry broker``, driven over REST.

One cluster serves the module: connectors created through any worker spread over all
three; a follower pauses, resumes, restarts and deletes; a SIGKILLed worker's tasks run
again on the survivors within ``scheduled.rebalance.max.delay.ms`` + 15 s while a
datagen → topic → FileStreamSink pipeline loses no record; the killed worker comes back
and gets work again; then the leader is killed and the survivors elect a new one and keep
serving the REST API.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dist_cluster import Cluster, WorkerProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DELAY_MS = 5000
WORKER_PROPS = {
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "1000",
    "scheduled.rebalance.max.delay.ms": str(DELAY_MS),
    "offset.flush.interval.ms": "1000",
    "offset.storage.partitions": "3",
    "status.storage.partitions": "2",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "task.shutdown.graceful.timeout.ms": "3000",
}
RECORDS = 6000
RATE = 400  # records/s over the three datagen tasks: the stream outlives the failover


def datagen(topic: str, records: int, rate: int) -> dict[str, str]:
    return {"connector.class": "datagen", "kafka.topic": topic, "quickstart": "orders",
            "tasks.max": "3", "iterations": str(records), "rate": str(rate),
            "topic.creation.default.partitions": "3",
            "topic.creation.default.replication.factor": "1"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("dist-cluster"), 3, WORKER_PROPS)
    try:
        c.start()
        yield c
    finally:
        c.close()


def worker_ids(status: dict[str, Any]) -> set[str]:
    return {status["connector"]["worker_id"], *(t["worker_id"] for t in status["tasks"])}


def order_ids(path: Path) -> set[int]:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return set()
    return {int(m) for m in re.findall(r"'orderid': (\d+)", text)}


def test_cluster_shares_work_is_controlled_from_followers_and_survives_a_killed_worker(
        cluster: Cluster, tmp_path: Path) -> None:
    w0, w1, w2 = cluster.workers
    out = tmp_path / "orders.txt"
    # Connectors created through different workers; the pipeline's source waits PAUSED
    # (KIP-980's initial state) until the failover part.
    cluster.call_until(w1, "POST", "/connectors", {"name": "gen", "config": datagen(
        "orders", RECORDS, RATE), "initial_state": "PAUSED"})
    cluster.call_until(w2, "POST", "/connectors", {"name": "sink", "config": {
        "connector.class": "FileStreamSink", "topics": "orders", "file": str(out),
        "tasks.max": "1", "consumer.override.session.timeout.ms": "6000",
        "consumer.override.heartbeat.interval.ms": "1000"}})
    cluster.call_until(w0, "POST", "/connectors", {"name": "ctl", "config": datagen(
        "ctl", 10**9, 30)})

    def spread() -> dict[str, dict[str, Any]] | None:
        statuses = {"gen": in_state(cluster, w0, "gen", 3, "PAUSED"),
                    "sink": cluster.running(w0, "sink", 1), "ctl": cluster.running(w0, "ctl", 3)}
        if not all(statuses.values()):
            return None
        owners = set().union(*(worker_ids(s) for s in statuses.values() if s))
        tasks = [t["worker_id"] for s in statuses.values() if s for t in s["tasks"]]
        per_worker = [tasks.count(w.worker_id) for w in cluster.workers]
        if owners == {w.worker_id for w in cluster.workers} and max(per_worker) - min(
                per_worker) <= 1:
            return statuses  # type: ignore[return-value]
        return None

    statuses = wait_for(spread, "7 tasks RUNNING spread evenly over the three workers",
                        detail=cluster.logs)
    # Every worker answers reads the same way; GET / names the broker's cluster id.
    meta = (cluster.tmp / "broker-data" / "meta.properties").read_text()
    cluster_id = re.search(r"^cluster\.id=(\S+)$", meta, re.M).group(1)  # type: ignore[union-attr]
    for w in cluster.workers:
        assert cluster.call(w, "GET", "/").json()["kafka_cluster_id"] == cluster_id
        assert cluster.call(w, "GET", "/connectors").json() == ["ctl", "gen", "sink"]
        assert cluster.call(w, "GET", "/connectors/gen/tasks").status_code == 200

    # ---- control through a follower (a worker that is not the leader: at most one is)
    follower = pick_follower(cluster)
    cluster.call_until(follower, "PUT", "/connectors/ctl/pause")
    wait_for(lambda: in_state(cluster, follower, "ctl", 3, "PAUSED"), "ctl PAUSED")
    cluster.call_until(follower, "PUT", "/connectors/ctl/resume")
    wait_for(lambda: cluster.running(follower, "ctl", 3), "ctl RUNNING again")
    plan = cluster.call_until(follower, "POST", "/connectors/ctl/restart?includeTasks=true",
                              ok=(202,)).json()
    assert plan["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in plan["tasks"]] == ["RESTARTING"] * 3
    wait_for(lambda: cluster.running(follower, "ctl", 3), "ctl RUNNING after its restart")
    # A task running on another worker is restarted there (forwarded to its owner).
    other = next(t for t in cluster.running(follower, "ctl", 3)["tasks"]  # type: ignore[index]
                 if t["worker_id"] != follower.worker_id)
    cluster.call_until(follower, "POST", f"/connectors/ctl/tasks/{other['id']}/restart",
                       ok=(204,))
    cluster.call_until(follower, "DELETE", "/connectors/ctl", ok=(204,))
    for w in cluster.workers:
        wait_for(lambda w=w: cluster.call(w, "GET", "/connectors/ctl").status_code == 404,
                 f"ctl gone on {w.name}")

    # ---- kill -9 a follower running pipeline work, mid-stream
    cluster.call_until(follower, "PUT", "/connectors/gen/resume", ok=(202,))
    wait_for(lambda: len(order_ids(out)) > RATE, "the pipeline to deliver records")
    statuses = wait_for(lambda: {n: cluster.running(w0, n, c) for n, c in (("gen", 3),
                                                                           ("sink", 1))},
                        "the pipeline RUNNING")
    victim = pick_victim(cluster, statuses)
    survivor = next(w for w in cluster.workers if w is not victim)
    assert len(order_ids(out)) < RECORDS, "the stream must still run when the worker dies"
    victim.kill()
    killed_at = time.monotonic()
    wait_for(lambda: cluster.running(survivor, "gen", 3, not_on=victim.worker_id)
             and cluster.running(survivor, "sink", 1, not_on=victim.worker_id),
             "the killed worker's work RUNNING on the survivors",
             timeout=DELAY_MS / 1000 + 15 - (time.monotonic() - killed_at),
             detail=cluster.logs)
    # No record lost: every datagen record number reaches the file (duplicates allowed).
    wait_for(lambda: order_ids(out) >= set(range(RECORDS)), "every record in the sink file",
             timeout=90, detail=lambda: f"missing {len(set(range(RECORDS)) - order_ids(out))}")

    # ---- the killed worker comes back (same id) and gets work again
    victim.start()
    cluster.wait_healthy(victim)

    def victim_has_work() -> bool:
        status = cluster.running(survivor, "gen", 3)
        sink = cluster.running(survivor, "sink", 1)
        return bool(status and sink and victim.worker_id in worker_ids(status) | worker_ids(
            sink))

    wait_for(victim_has_work, "the restarted worker to get work back", detail=cluster.logs)


def test_killed_leader_is_replaced_and_the_rest_api_keeps_working(cluster: Cluster) -> None:
    for w in cluster.workers:
        if not w.alive:
            w.start()
            cluster.wait_healthy(w)
    cluster.call_until(cluster.workers[0], "PUT", "/connectors/lead/config", datagen(
        "lead", 10**9, 30), ok=(200, 201))
    wait_for(lambda: cluster.running(cluster.workers[0], "lead", 3), "lead RUNNING")
    leader = find_leader(cluster)
    survivors = [w for w in cluster.workers if w is not leader]
    leader.kill()
    # Writes need a leader: through every survivor they succeed again.
    for i, w in enumerate(survivors):
        cluster.call_until(w, "PUT", f"/connectors/after-{i}/config", datagen(
            f"after-{i}", 10**9, 30), ok=(200, 201), timeout=60)
    for w in survivors:
        wait_for(lambda w=w: cluster.running(w, "lead", 3, not_on=leader.worker_id),
                 f"lead RUNNING on the survivors, seen from {w.name}", timeout=60,
                 detail=cluster.logs)
        for i in range(len(survivors)):
            wait_for(lambda w=w, i=i: cluster.running(w, f"after-{i}", 3),
                     f"after-{i} RUNNING, seen from {w.name}", detail=cluster.logs)
    new_leader = find_leader(cluster)
    assert new_leader is not leader
    cluster.call_until(survivors[0], "DELETE", "/connectors/lead", ok=(204,))


# ---------------------------------------------------------------------- helpers

def in_state(cluster: Cluster, worker: WorkerProcess, name: str, tasks: int,
             state: str) -> dict[str, Any] | None:
    status = cluster.status(worker, name)
    if status is None or len(status["tasks"]) != tasks:
        return None
    return status if all(s["state"] == state
                         for s in [status["connector"], *status["tasks"]]) else None


def find_leader(cluster: Cluster) -> WorkerProcess:
    """The worker whose log says it led the latest generation."""
    def latest(w: WorkerProcess) -> tuple[int, bool]:
        found = re.findall(r"completed generation (\d+) of group \S+ as (leader|follower)",
                           w.log_path.read_text(errors="replace"))
        return (int(found[-1][0]), found[-1][1] == "leader") if found else (-1, False)

    def check() -> WorkerProcess | None:
        alive = cluster.alive()
        latest_by = {w.name: latest(w) for w in alive}
        top = max(g for g, _ in latest_by.values())
        leaders = [w for w in alive if latest_by[w.name] == (top, True)]
        return leaders[0] if len(leaders) == 1 else None

    result: WorkerProcess = wait_for(check, "one leader of the latest generation")
    return result


def pick_follower(cluster: Cluster) -> WorkerProcess:
    leader = find_leader(cluster)
    return next(w for w in cluster.workers if w is not leader)


def pick_victim(cluster: Cluster, statuses: dict[str, Any]) -> WorkerProcess:
    """A follower, preferably the one running the sink task, else the one with most of
    the pipeline's tasks."""
    leader = find_leader(cluster)
    followers = [w for w in cluster.workers if w is not leader]
    sink_owner = statuses["sink"]["tasks"][0]["worker_id"]
    for w in followers:
        if w.worker_id == sink_owner:
            return w
    gen_tasks = [t["worker_id"] for t in statuses["gen"]["tasks"]]
    return max(followers, key=lambda w: gen_tasks.count(w.worker_id))
