"""``ferry broker --config ... --metrics HOST:PORT`` on a cluster node: ``/metrics`` shows
the cluster's own values (partitions, leaders, under-replicated and under-min-ISR counts,
ISR shrinks, the active controller) and ``/health`` follows KIP-1017 with the controller's
reachability: healthy once the controller unfenced the broker, unhealthy (500, saying
why) while the quorum is lost, healthy again when it returns."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cluster_process import start_cluster, wait_for
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from metrics_scrape import health, scrape

SETTINGS = {"replica.lag.time.max.ms": "1500", "offsets.topic.num.partitions": "3",
            "replica.fetch.wait.max.ms": "200"}


@pytest.fixture
def cluster(tmp_path: Path):
    nodes = start_cluster(tmp_path, broker=True, metrics=True, **SETTINGS)
    yield nodes
    for node in nodes:
        node.kill()


def _url(node) -> str:
    return f"http://127.0.0.1:{node.metrics_port}"


def _health(node) -> tuple[int, dict] | None:
    try:
        return health(_url(node))
    except OSError:
        return None


def _sum(nodes, name: str, **labels: str) -> float:
    return sum(scrape(_url(n)).value(name, **labels) for n in nodes)


def test_metrics_and_health_follow_the_cluster(cluster) -> None:
    nodes = cluster
    for node in nodes:
        wait_for(lambda node=node: (_health(node) or (0,))[0] == 200, 60,
                 f"node {node.node_id} healthy", nodes)
    assert _health(nodes[0])[1]["status"] == "healthy"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[0].kafka_port}"})
    admin.create_topics([NewTopic("watched", 3, 3, config={"min.insync.replicas": "3"})]
                        )["watched"].result(timeout=30)
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{nodes[1].kafka_port}",
                         "acks": "all", "message.timeout.ms": 30000})
    for i in range(30):
        producer.produce("watched", str(i).encode(), partition=i % 3)
    assert producer.flush(40) == 0

    # Every broker holds all 3 partitions; each is led once (offsets too); nothing is
    # under-replicated. Each broker counts from its own metadata image: while a leader
    # moves, the old and the new leader may both count the partition for a moment.
    def steady() -> bool:
        held = [scrape(_url(n)).value("kafka_server_replicamanager_partitioncount")
                for n in nodes]
        return (min(held) >= 3 and len(set(held)) == 1
                and _sum(nodes, "kafka_server_replicamanager_leadercount") == held[0]
                and _sum(nodes, "kafka_server_replicamanager_underreplicatedpartitions") == 0
                and _sum(nodes, "kafka_controller_kafkacontroller_activecontrollercount") == 1)
    wait_for(steady, 30, "a steady cluster in /metrics, each partition led once", nodes)
    held = scrape(_url(nodes[0])).value("kafka_server_replicamanager_partitioncount")
    assert _sum(nodes, "kafka_server_brokertopicmetrics_messagesin_total",
                topic="watched") == 30  # counted by the leaders only

    # SIGKILL node 3: the survivors shrink the ISRs they lead; "watched" needs 3 in sync.
    nodes[2].kill()
    survivors = nodes[:2]

    def shrunk() -> bool:
        lead = _sum(survivors, "kafka_server_replicamanager_leadercount")
        return (lead == held
                and _sum(survivors, "kafka_server_replicamanager_underreplicatedpartitions")
                == held
                and _sum(survivors, "kafka_server_replicamanager_underminisrpartitioncount")
                == 3)
    wait_for(shrunk, 40, "every partition led by a survivor, under-replicated", nodes)
    assert _sum(survivors, "kafka_server_replicamanager_isrshrinks_total") >= 1
    assert all(_health(n)[0] == 200 for n in survivors)  # a quorum of 2 still answers

    # SIGKILL node 2 too: no quorum, node 1's heartbeats go unanswered -> unhealthy.
    nodes[1].kill()
    wait_for(lambda: (_health(nodes[0]) or (0,))[0] == 500, 30,
             "node 1 unhealthy without a controller", nodes)
    assert "controller" in _health(nodes[0])[1]["message"]

    # Node 2 back: the quorum returns, node 1 is healthy again; the ISR expands.
    nodes[1].start()
    for node in nodes[:2]:
        wait_for(lambda node=node: (_health(node) or (0,))[0] == 200, 60,
                 f"node {node.node_id} healthy again", nodes)
    wait_for(lambda: _sum(nodes[:2], "kafka_server_replicamanager_isrexpands_total") >= 1,
             40, "an ISR expansion counted", nodes)


def test_a_node_without_a_quorum_is_starting(tmp_path: Path) -> None:
    """One voter of three alone: no controller registers it, /health stays 503."""
    nodes = start_cluster(tmp_path, broker=True, metrics=True, **SETTINGS)
    try:
        for node in nodes[1:]:
            node.kill()
        wait_for(lambda: "controller" in ((_health(nodes[0]) or (0, {}))[1].get("message", "")),
                 30, "node 1 waiting for a controller", nodes)
        for _ in range(5):  # and it stays so (registration needs a quorum)
            status, body = _health(nodes[0])
            assert (status, body["status"]) == (503, "starting"), body
            assert "registering with the controller" in body["message"]
            time.sleep(0.5)
        assert scrape(_url(nodes[0])).value("kafka_server_replicamanager_leadercount") == 0
    finally:
        for node in nodes:
            node.kill()
