"""Three cluster nodes as real processes: they elect a controller, register their brokers
with leases, create topics through whichever node is the controller, and keep every
committed change when the controller is SIGKILLed; a restarted node catches up from its
fsynced log and registers with a higher broker epoch. A node whose config is wrong exits
with one line naming the key."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_process import running_cluster, wait_for

from core.cluster.service import request


def _controller(nodes):
    for node in nodes:
        if node.alive:
            view = node.describe()
            if view and view["controller_id"] is not None:
                found = next((n for n in nodes if n.node_id == view["controller_id"]), None)
                if found is not None:
                    return found
    return None


def _live_brokers(view) -> list[int]:
    return sorted(int(b) for b, s in view["brokers"].items() if not s["fenced"])


def _create(nodes, name: str, partitions: int, rf: int) -> dict:
    def attempt():
        controller = _controller(nodes)
        if controller is None or not controller.alive:
            return None
        try:
            reply = asyncio.run(request("127.0.0.1", controller.controller_port,
                                        "create_topic", {"name": name, "partitions": partitions,
                                                         "replication_factor": rf}))
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            return None
        return reply if reply["error_code"] != 41 else None  # NOT_CONTROLLER: ask again
    return wait_for(attempt, 20, f"creating {name}", nodes)


@pytest.fixture
def cluster(tmp_path: Path):
    with running_cluster(tmp_path) as nodes:
        yield nodes


def test_three_processes_form_a_quorum_and_survive_the_controller_being_killed(cluster):
    nodes = cluster
    view = wait_for(lambda: (v := nodes[0].describe()) and len(_live_brokers(v)) == 3 and v,
                    30, "three live brokers", nodes)
    assert view["controller_id"] in (1, 2, 3)
    reply = _create(nodes, "orders", 6, 3)
    assert reply["error_code"] == 0, reply
    again = _create(nodes, "orders", 1, 1)
    assert again["error_code"] == 36  # TOPIC_ALREADY_EXISTS
    too_many = _create(nodes, "wide", 1, 4)
    assert too_many["error_code"] == 38  # INVALID_REPLICATION_FACTOR

    # every node applies the same committed topic, with replicas on all three brokers
    for node in nodes:
        topic = wait_for(lambda n=node: (v := n.describe()) and v["topics"].get("orders"),
                         10, f"orders on node {node.node_id}", nodes)
        assert len(topic["partitions"]) == 6
        assert sorted({p["leader"] for p in topic["partitions"]}) == [1, 2, 3]
        assert all(sorted(p["replicas"]) == [1, 2, 3] == sorted(p["isr"])
                   for p in topic["partitions"])

    victim = _controller(nodes)
    old_epoch = nodes[0].describe()["brokers"][str(victim.node_id)]["epoch"]
    victim.kill()
    survivors = [n for n in nodes if n is not victim]
    new = wait_for(lambda: (c := _controller(survivors)) and c is not victim and c, 15,
                   "a new controller", nodes)
    assert new.node_id != victim.node_id
    # the killed broker's lease lapses: it is fenced and leads nothing
    view = wait_for(lambda: (v := new.describe()) and
                    v["brokers"][str(victim.node_id)]["fenced"] and v, 15,
                    "the killed broker fenced", nodes)
    for p in view["topics"]["orders"]["partitions"]:
        assert p["leader"] != victim.node_id and victim.node_id not in p["isr"]
        assert p["leader"] in p["isr"]
    assert _create(nodes, "after-failover", 2, 2)["error_code"] == 0

    # the killed node restarts from its fsynced log and catches up
    victim.start()
    view = wait_for(lambda: (v := victim.describe()) and "after-failover" in v["topics"]
                    and not v["brokers"][str(victim.node_id)]["fenced"] and v, 30,
                    "the restarted node caught up and unfenced", nodes)
    assert view["brokers"][str(victim.node_id)]["epoch"] > old_epoch
    assert view["topics"]["orders"] == new.describe()["topics"]["orders"]


def test_a_paused_controller_is_replaced_and_follows_after_it_resumes(cluster):
    """SIGSTOP past the election timeout and the session: the others elect a controller,
    fence the paused broker, and keep committing; resumed, it follows the new term."""
    nodes = cluster
    wait_for(lambda: (v := nodes[0].describe()) and len(_live_brokers(v)) == 3, 30,
             "three live brokers", nodes)
    paused = _controller(nodes)
    paused.pause()
    try:
        others = [n for n in nodes if n is not paused]
        new = wait_for(lambda: (c := _controller(others)) and c, 15, "a new controller", nodes)
        # the new controller gives every broker a full session from its election first
        wait_for(lambda: (v := new.describe()) and v["brokers"][str(paused.node_id)]["fenced"],
                 15, "the paused broker fenced", nodes)
        reply = _create(others, "while-paused", 3, 2)
        assert reply["error_code"] == 0, (reply, new.describe()["brokers"])
        view = new.describe()
        for p in view["topics"]["while-paused"]["partitions"]:
            assert paused.node_id not in p["replicas"]  # placed on live brokers only
    finally:
        paused.resume()
    view = wait_for(lambda: (v := paused.describe()) and "while-paused" in v["topics"]
                    and v["controller_id"] != paused.node_id
                    and not v["brokers"][str(paused.node_id)]["fenced"] and v, 30,
                    "the resumed node following and unfenced", nodes)
    assert view["topics"] == new.describe()["topics"]


def test_a_whole_cluster_sigkill_loses_no_committed_change(cluster):
    """Every node killed at once, then restarted: what was committed (acknowledged) is
    back from the fsynced logs, brokers register again with higher epochs, and the
    cluster keeps working; then a rolling restart, one node at a time."""
    nodes = cluster
    wait_for(lambda: (v := nodes[0].describe()) and len(_live_brokers(v)) == 3, 30,
             "three live brokers", nodes)
    for i in range(5):
        assert _create(nodes, f"t{i}", 2, 3)["error_code"] == 0
    before = _controller(nodes).describe()
    for node in nodes:
        node.kill()
    for node in nodes:
        node.start()
    def reregistered():  # the replayed log says "live" at first: wait for new epochs
        v = nodes[1].describe()
        return v and len(_live_brokers(v)) == 3 and all(
            v["brokers"][b]["epoch"] > before["brokers"][b]["epoch"] for b in v["brokers"]) and v

    view = wait_for(reregistered, 30, "the cluster back", nodes)
    assert {f"t{i}" for i in range(5)} <= set(view["topics"])
    for name in (f"t{i}" for i in range(5)):
        assert view["topics"][name]["topic_id"] == before["topics"][name]["topic_id"]
    for broker, state in view["brokers"].items():
        assert state["epoch"] > before["brokers"][broker]["epoch"]
    for node in nodes:  # rolling restart: each comes back re-registered and unfenced
        epoch = view["brokers"][str(node.node_id)]["epoch"]
        node.stop()
        node.start()

        def back(node=node, epoch=epoch):
            v = node.describe()
            state = v and v["brokers"].get(str(node.node_id))
            return state and state["epoch"] > epoch and len(_live_brokers(v)) == 3 and v

        view = wait_for(back, 30, f"node {node.node_id} back", nodes)
    assert _create(nodes, "after-rolling-restart", 1, 3)["error_code"] == 0


def test_a_broker_only_node_observes_the_log_and_keeps_its_lease(tmp_path: Path):
    """A fourth node with process.roles=broker and controller.quorum.bootstrap.servers:
    it is unfenced only once it applied the log up to its registration (which it reports in
    its heartbeats), gets replicas, and keeps its lease across a controller failover."""
    with running_cluster(tmp_path, broker_only=1) as nodes:
        voters, observer = nodes[:3], nodes[3]
        wait_for(lambda: (v := voters[0].describe()) and len(_live_brokers(v)) == 4, 30,
                 "four live brokers", nodes)
        assert _create(voters, "wide", 4, 4)["error_code"] == 0
        view = wait_for(lambda: (v := voters[0].describe()) and "wide" in v["topics"] and v,
                        10, "the topic applied", nodes)
        assert all(4 in p["replicas"] for p in view["topics"]["wide"]["partitions"])
        epoch = view["brokers"]["4"]["epoch"]
        controller = _controller(voters)
        controller.kill()
        others = [n for n in voters if n is not controller]
        new = wait_for(lambda: (c := _controller(others)) and c, 15, "a new controller", nodes)
        time.sleep(4)  # past broker.session.timeout.ms (3 s) under the new controller
        view = new.describe()
        assert not view["brokers"]["4"]["fenced"] and view["brokers"]["4"]["epoch"] == epoch
        assert observer.alive


def test_a_bad_setting_is_one_line_naming_the_key(tmp_path: Path):
    config = tmp_path / "bad.properties"
    config.write_text("process.roles=broker,controller\nnode.id=4\n"
                      "controller.quorum.voters=1@127.0.0.1:9093\n"
                      "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
                      "controller.listener.names=CONTROLLER\nlog.dirs=" + str(tmp_path) + "\n")
    result = subprocess.run([sys.executable, "-m", "core.cli.cluster_node", "--config",
                             str(config)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "controller.quorum.voters" in result.stderr and "node.id=4" in result.stderr


def test_a_controller_port_in_use_is_one_line(tmp_path: Path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "node.properties"
        config.write_text("process.roles=controller\nnode.id=1\n"
                          f"controller.quorum.voters=1@127.0.0.1:{port}\n"
                          f"listeners=CONTROLLER://127.0.0.1:{port}\n"
                          f"controller.listener.names=CONTROLLER\nlog.dirs={tmp_path}\n")
        result = subprocess.run([sys.executable, "-m", "core.cli.cluster_node", "--config",
                                 str(config)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("cluster node: error: cannot start") and "Traceback" not in \
        result.stderr
