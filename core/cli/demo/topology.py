"""The settings of the demo's Ferry services, shared by ``ferry demo`` (local processes)
and ``docker/compose.yaml`` (whose ``FERRY_<SERVICE>_*`` variables the compose test checks
against these): one definition of the topology, two ways to run it.

Brokers use Kafka's KRaft names (``node.id``, ``process.roles``, ...), as issue 16's
cluster mode reads them; a single broker is today's one-node ``ferry broker``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CONNECT_GROUP",
    "PIPELINE_ARGS",
    "STATE_TOPIC",
    "TOTALS_TOPIC",
    "Node",
    "broker_settings",
    "registry_settings",
    "worker_settings",
]

CONNECT_GROUP = "ferry-demo-connect"
SOURCE_TOPIC = "shop.public.orders"
STATE_TOPIC = "orders-state"
TOTALS_TOPIC = "order-totals"
#: ``ferry pipeline run cdc_order_totals`` options, after --log and --checkpoint.
PIPELINE_ARGS = ("--source", SOURCE_TOPIC, "--state-topic", STATE_TOPIC,
                 "--totals-topic", TOTALS_TOPIC, "--window", "1 minute",
                 "--trigger", "2 seconds", "--totals-envelope", "connect-json",
                 "--conf", "spark.sql.session.timeZone=UTC", "--conf", "spark.ui.enabled=false")


@dataclass(frozen=True)
class Node:
    """A broker node's addresses: ``host`` is the name the other nodes and the clients
    reach it by, ``bind`` the address its listeners bind (``0.0.0.0`` in a container)."""

    node_id: int
    host: str
    port: int
    controller_port: int
    bind: str = ""

    @property
    def advertised(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def listen_host(self) -> str:
        return self.bind or self.host


def broker_settings(node: Node, nodes: Sequence[Node], data_dir: str) -> dict[str, str]:
    """One broker's properties. Several nodes form a KRaft-style cluster (combined
    broker and controller roles, replication factor up to 3)."""
    settings = {"log.dirs": data_dir, "group.initial.rebalance.delay.ms": "0",
                "num.partitions": "1"}
    if len(nodes) == 1:
        return {**settings, "listeners": f"{node.listen_host}:{node.port}",
                "advertised.listeners": node.advertised}
    rf = str(min(3, len(nodes)))
    return {
        **settings,
        "node.id": str(node.node_id),
        "process.roles": "broker,controller",
        "controller.quorum.voters": ",".join(
            f"{n.node_id}@{n.host}:{n.controller_port}" for n in nodes),
        "listeners": f"PLAINTEXT://{node.listen_host}:{node.port},"
                     f"CONTROLLER://{node.listen_host}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{node.advertised}",
        "controller.listener.names": "CONTROLLER",
        "default.replication.factor": rf,
        "offsets.topic.replication.factor": rf,
        "min.insync.replicas": str(min(2, len(nodes))),
    }


def bootstrap(nodes: Sequence[Node]) -> str:
    """The brokers' client addresses, comma-separated (``kafka://`` takes this list)."""
    return ",".join(n.advertised for n in nodes)


def worker_settings(log_url: str) -> dict[str, str]:
    """A distributed Connect worker's properties (``ferry.log``: where the topics live)."""
    return {
        "ferry.log": log_url,
        "group.id": CONNECT_GROUP,
        "config.storage.topic": "ferry-demo-configs",
        "offset.storage.topic": "ferry-demo-offsets",
        "status.storage.topic": "ferry-demo-status",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "offset.flush.interval.ms": "1000",
        "session.timeout.ms": "10000",
        "heartbeat.interval.ms": "2000",
        "scheduled.rebalance.max.delay.ms": "5000",
    }


def registry_settings(log_url: str) -> dict[str, str]:
    """The Schema Registry's properties."""
    return {"ferry.log": log_url, "schema.registry.group.id": "ferry-demo-registry"}
