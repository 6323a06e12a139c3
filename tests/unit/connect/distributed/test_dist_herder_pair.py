"""Two distributed workers in this process on one ``embedded:`` log: work spreads, every
REST call works on either worker (writes forwarded to the leader, task restarts to the
task's worker, two hops at most), the session key rotates, and a worker that leaves has
its work taken over after ``scheduled.rebalance.max.delay.ms``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dist_herder_harness import LocalCluster, call, running, source, starts, status, wait_for

from connect.cli import DistributedWorker


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def pair(cluster: LocalCluster, **props: str) -> tuple[DistributedWorker, DistributedWorker]:
    """Two workers; returns ``(leader, follower)``."""
    first, second = cluster.add(**props), cluster.add(**props)
    wait_for(cluster.settled, "both workers in one generation")
    leader = cluster.leader()
    return leader, (second if leader is first else first)


def owners(found: dict) -> list[str]:
    return [found["connector"]["worker_id"], *(t["worker_id"] for t in found["tasks"])]


def test_work_spreads_and_every_call_works_through_the_follower(cluster: LocalCluster) -> None:
    leader, follower = pair(cluster)
    base = follower.url
    code, body = call(base, "POST", "/connectors", {"name": "a", "config": source(tasks=4)})
    assert code == 201, body
    # The follower answers reads of its own write at once (it read the config topic).
    assert call(base, "GET", "/connectors/a")[0] == 200
    assert call(base, "POST", "/connectors", {"name": "b", "config": source(tasks=2)})[0] == 201

    def spread() -> bool:
        a, b = running(base, "a", 4), running(base, "b", 2)
        if not a or not b:
            return False
        tasks = [t["worker_id"] for s in (a, b) for t in s["tasks"]]
        return tasks.count(leader.worker_id) == tasks.count(follower.worker_id) == 3

    wait_for(spread, "six tasks, three on each worker")
    for w in (leader, follower):
        assert call(w.url, "GET", "/connectors") == (200, ["a", "b"])

    # A task of the other worker restarts there, through this one.
    found = running(base, "a", 4)
    remote = next(t["id"] for t in found["tasks"] if t["worker_id"] == leader.worker_id)
    before = starts("a", remote)
    assert call(base, "POST", f"/connectors/a/tasks/{remote}/restart")[0] == 204
    wait_for(lambda: starts("a", remote) == before + 1, f"task a-{remote} restarted")
    connector_owner = found["connector"]["worker_id"]
    other = follower if connector_owner == leader.worker_id else leader
    assert call(other.url, "POST", "/connectors/a/restart")[0] == 204

    # Target states and deletion through the follower.
    assert call(base, "PUT", "/connectors/b/pause")[0] == 202
    wait_for(lambda: (s := status(leader.url, "b")) and set(
        x["state"] for x in [s["connector"], *s["tasks"]]) == {"PAUSED"}, "b PAUSED")
    assert call(base, "PUT", "/connectors/b/resume")[0] == 202
    wait_for(lambda: running(leader.url, "b", 2), "b RUNNING")
    code, plan = call(base, "POST", "/connectors/b/restart?includeTasks=true")
    assert code == 202 and plan["connector"]["state"] == "RESTARTING"
    assert call(base, "DELETE", "/connectors/b")[0] == 204
    assert call(base, "GET", "/connectors/b")[0] == 404
    wait_for(lambda: call(leader.url, "GET", "/connectors") == (200, ["a"]), "b deleted")

    # A request already forwarded twice is not forwarded again: 409, Kafka's message.
    code, body = call(base, "PUT", "/connectors/a/pause?forward=false")
    assert code == 409
    assert body["message"] == ("Cannot complete request because of a conflicting operation "
                               "(e.g. worker rebalance)")
    # The leader runs such a request itself.
    assert call(leader.url, "PUT", "/connectors/a/pause?forward=false")[0] == 202


def test_session_key_rotates_and_followers_keep_sending_task_configs(
        cluster: LocalCluster) -> None:
    leader, follower = pair(cluster, **{"inter.worker.key.ttl.ms": "1000"})
    first = leader.herder.config_store.snapshot().session_key
    assert first is not None
    wait_for(lambda: (k := follower.herder.config_store.snapshot().session_key) is not None
             and k.creation_timestamp > first.creation_timestamp, "a rotated key")
    # Connectors whose instance runs on the follower get task configs through the leader.
    for n in range(4):
        assert call(follower.url, "POST", "/connectors", {
            "name": f"k{n}", "config": source(tasks=1)})[0] == 201
    for n in range(4):
        wait_for(lambda n=n: running(leader.url, f"k{n}", 1), f"k{n} RUNNING")
    on_follower = [n for n in range(4) if running(leader.url, f"k{n}", 1)["connector"][
        "worker_id"] == follower.worker_id]
    assert on_follower, "some connector instance runs on the follower"


def test_leaving_workers_work_waits_the_delay_then_moves(cluster: LocalCluster) -> None:
    leader, follower = pair(cluster, **{"scheduled.rebalance.max.delay.ms": "1500"})
    assert call(leader.url, "POST", "/connectors", {"name": "m", "config": source(tasks=2)})[
        0] == 201
    wait_for(lambda: (s := running(leader.url, "m", 2)) and follower.worker_id in owners(s),
             "m partly on the follower")
    follower.stop()
    # The survivor (leading now, or already) takes the work over once the delay passed.
    wait_for(lambda: (s := running(leader.url, "m", 2)) and set(owners(s)) == {
        leader.worker_id}, "m entirely on the survivor")
    assert call(leader.url, "PUT", "/connectors/m/pause")[0] == 202
