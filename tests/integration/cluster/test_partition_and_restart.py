"""More faults for the Jepsen-style suite (see test_replication_faults.py; the workload and
the checker are tests/jepsen_workload.py and tests/jepsen_checker.py): acks=all with
idempotence, RF=3, min.insync.replicas=2.

* A network partition isolates a partition leader together with the test's client. Each
  node listens on three listeners, CLIENT (the clients'), INTERNAL (the inter-broker one,
  which followers fetch from) and CONTROLLER (Raft and the forwarding to the active
  controller), and each of them sits behind a proxy of tests/fault_proxy.py: CLIENT and
  INTERNAL are advertised as their proxies, and ``controller.quorum.voters`` names the
  CONTROLLER proxies. The proxies know which process opened each connection, so cutting
  the leader off closes every connection between it and the two other nodes in both
  directions (replication, Raft, heartbeats), and the client's connections to the two
  others, while the client still reaches the isolated leader. Separate listeners, rather
  than one shared by clients and followers, keep the client's path to the leader open
  while the followers' is cut. The isolated leader acknowledges nothing (its followers
  cannot fetch, so its high watermark stays put), the others fence it and elect new
  leaders, and once healed nothing acknowledged is lost.
* Whole-cluster restart: all three nodes SIGKILLed at once mid-stream, then started: every
  acknowledged write is read back at its offset, the replicas end equal, and a consumer
  group's committed offsets did not go backwards.
* A topic deleted while a node was down is removed from that node's disk when it is back.
"""

from __future__ import annotations

import time
from pathlib import Path

import fault_proxy
import pytest
from broker_process import free_port
from cluster_process import ClusterNodeProcess, running_cluster, wait_for
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from fault_proxy import FaultNetwork
from jepsen_workload import (
    SETTINGS,
    TOPIC,
    bootstrap,
    cluster_view,
    committed_offsets,
    create_topic,
    full_isrs,
    idempotent_workload,
    nothing_lost,
    partition_spec,
    ready,
    replicas_converge,
)

pytestmark = pytest.mark.slow


def _proxied_cluster(directory: Path, network: FaultNetwork) -> list[ClusterNodeProcess]:
    """Three combined nodes whose CLIENT, INTERNAL and CONTROLLER listeners are reached
    through ``network``'s proxies; ``kafka_port`` is the CLIENT proxy (clients bootstrap
    there), ``controller_port`` the real controller listener (``describe`` bypasses the
    proxies, so the test sees every side of the cut)."""
    ids = (1, 2, 3)
    real = {i: {"CLIENT": free_port(), "INTERNAL": free_port(), "CONTROLLER": free_port()}
            for i in ids}
    proxies = {i: {name: network.proxy(i, port) for name, port in real[i].items()}
               for i in ids}
    voters = ",".join(f"{i}@127.0.0.1:{proxies[i]['CONTROLLER'].port}" for i in ids)
    nodes = []
    for i in ids:
        node = ClusterNodeProcess(i, directory, voters, real[i]["CONTROLLER"], {},
                                  broker=True)
        node.kafka_port = proxies[i]["CLIENT"].port
        settings = {
            "process.roles": "broker,controller", "node.id": str(i),
            "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(f"{name}://127.0.0.1:{port}"
                                  for name, port in real[i].items()),
            "advertised.listeners": ",".join(
                f"{name}://127.0.0.1:{proxies[i][name].port}" for name in ("CLIENT",
                                                                           "INTERNAL")),
            "listener.security.protocol.map":
                "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL", "log.dirs": str(node.data_dir),
            "controller.quorum.election.timeout.ms": "500", **SETTINGS}
        node.config_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        nodes.append(node)
    for node in nodes:
        node.start()
    return nodes


@pytest.mark.skipif(not fault_proxy.supported(), reason="needs Linux's /proc to trace "
                    "each connection to its process")
def test_a_leader_isolated_with_a_client_acknowledges_nothing_and_nothing_is_lost(
        tmp_path: Path) -> None:
    nodes: list[ClusterNodeProcess] = []
    network = FaultNetwork(lambda: {n.proc.pid: n.node_id for n in nodes if n.alive})
    try:
        nodes.extend(_proxied_cluster(tmp_path, network))
        workload = idempotent_workload(nodes)
        workload.send(2.0)
        before = partition_spec(nodes, 0)
        isolated = before["leader"]
        majority = [n for n in nodes if n.node_id != isolated]
        network.isolate({isolated}, with_clients=True)
        cut_at = time.monotonic()
        # Past broker.session.timeout.ms the majority fences the isolated broker and moves
        # its partitions, while the client keeps writing to it alone.
        deadline = cut_at + 20
        workload.send(4.0)
        while partition_spec(majority, 0)["leader"] in (isolated, -1):
            assert time.monotonic() < deadline, "no new leader on the majority side"
            workload.send(0.5)
        assert partition_spec(majority, 0)["leader_epoch"] > before["leader_epoch"]
        workload.send(1.0)
        healed_at = time.monotonic()
        network.heal()
        # Replies already on their way when the cut came are allowed a second.
        during = [v for v, at in workload.acknowledged_at.items()
                  if cut_at + 1.0 < at < healed_at]
        assert not during, f"{len(during)} writes acknowledged across the cut: {during[:10]}"
        workload.send(3.0)
        result = nothing_lost(nodes, workload)
        after = [v for v, at in workload.acknowledged_at.items() if at > healed_at]
        assert after and result.acknowledged > 300, result.summary()
        wait_for(lambda: full_isrs(nodes), 30, "the isolated broker back in every ISR",
                 nodes)
    finally:
        for node in nodes:
            node.kill()
        network.close()


def _commit_some(nodes: list[ClusterNodeProcess], group: str, count: int
                 ) -> dict[int, int]:
    """A group member consumes ``count`` records and commits; the committed offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap(nodes), "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "topic.metadata.refresh.interval.ms": 500})
    try:
        consumer.subscribe([TOPIC])
        seen, deadline = 0, time.monotonic() + 30
        while seen < count:
            assert time.monotonic() < deadline, f"consumed {seen} of {count}"
            seen += sum(1 for m in consumer.consume(100, 0.5) if not m.error())
        committed = consumer.commit(asynchronous=False)
        return {tp.partition: tp.offset for tp in committed if tp.offset >= 0}
    finally:
        consumer.close()


def test_a_whole_cluster_sigkill_and_restart_loses_no_acknowledged_write(tmp_path: Path
                                                                         ) -> None:
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        workload = idempotent_workload(nodes)
        workload.send(2.0)
        workload.finish()
        group = "restarted-group"
        before = _commit_some(nodes, group, len(workload.acknowledged) // 2)
        assert before
        workload.send(1.5)  # SIGKILL all three with writes in flight
        for node in nodes:
            node.kill()
        for node in nodes:
            node.start()
        ready(nodes)
        workload.send(2.0)
        result = nothing_lost(nodes, workload)
        assert result.acknowledged > 300, result.summary()
        reader = Consumer({"bootstrap.servers": bootstrap(nodes), "group.id": group,
                           "enable.auto.commit": False})
        try:
            after = wait_for(lambda: committed_offsets(reader), 30, "the committed offsets",
                             nodes)
        finally:
            reader.close()
        assert all(after[p] >= offset for p, offset in before.items()), (before, after)
        replicas_converge(nodes)


@pytest.mark.parametrize("recreated", [False, True], ids=["deleted", "created-again"])
def test_a_topic_deleted_while_a_node_was_down_leaves_its_disk_when_it_is_back(
        tmp_path: Path, recreated: bool) -> None:
    """Deleted while the node was down (and, in the second case, created again under the
    same name on the two other brokers): the node's old replicas go when it is back."""
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        ready(nodes)
        create_topic(nodes)
        absent = nodes[2]
        wait_for(lambda: any(absent.data_dir.glob(f"{TOPIC}-*")), 20,
                 f"node {absent.node_id}'s replicas", nodes)
        absent.kill()
        up = nodes[:2]
        wait_for(lambda: sum(not b["fenced"] for b in cluster_view(up)["brokers"].values())
                 == 2, 20, "the node fenced", nodes)
        admin = AdminClient({"bootstrap.servers": bootstrap(up)})
        admin.delete_topics([TOPIC], operation_timeout=10)[TOPIC].result(timeout=30)
        wait_for(lambda: TOPIC not in cluster_view(up)["topics"], 20, "the deletion", nodes)
        if recreated:  # on the two live brokers only: the absent node has no replica
            admin.create_topics([NewTopic(TOPIC, 1, 2)])[TOPIC].result(timeout=30)
        absent.start()
        ready(nodes)
        wait_for(lambda: not any(absent.data_dir.glob(f"{TOPIC}-*")), 20,
                 f"{TOPIC}'s directories gone from node {absent.node_id}'s disk", nodes)
        for node in up:
            assert any(node.data_dir.glob(f"{TOPIC}-*")) == recreated
        # What the metadata still has stays: the internal offsets topic's replicas.
        assert any(absent.data_dir.glob("__consumer_offsets-*"))
