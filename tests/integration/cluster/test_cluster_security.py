"""A cluster node serves every listener of ``listeners`` (but the controller's) with its
protocol from ``listener.security.protocol.map``, TLS and SASL as a single node does;
Metadata and FindCoordinator name each broker's endpoint of the listener the client came
through; followers fetch through ``inter.broker.listener.name`` with Kafka's inter-broker
security settings. Real clients: librdkafka over SASL_SSL producing with acks=all (every
replica in sync: min.insync.replicas=3) and consuming in a group."""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_process import free_port
from certificates import make_certificates
from cluster_process import ClusterNodeProcess, all_unfenced, wait_for
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

USERS = 'user_alice="alice-pw" user_broker="broker-pw"'
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="broker" password="broker-pw" {USERS};')


def _cluster(tmp_path: Path, client: str, internal: str, extra: dict[str, str]
             ) -> list[ClusterNodeProcess]:
    """Three combined nodes: CLIENT (listed first) and INTERNAL (the inter-broker
    listener) with the given protocols, CONTROLLER plain."""
    ports = [free_port() for _ in range(3)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    nodes = []
    for i in range(3):
        node = ClusterNodeProcess(i + 1, tmp_path, voters, ports[i], {}, broker=True)
        node.client_port = free_port()
        settings = {
            "process.roles": "broker,controller", "node.id": str(i + 1),
            "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
            "listeners": f"CLIENT://127.0.0.1:{node.client_port},"
                         f"INTERNAL://127.0.0.1:{node.kafka_port},"
                         f"CONTROLLER://127.0.0.1:{ports[i]}",
            "listener.security.protocol.map":
                f"CLIENT:{client},INTERNAL:{internal},CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL", "log.dirs": str(node.data_dir),
            "controller.quorum.election.timeout.ms": "500",
            "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
            "replica.lag.time.max.ms": "3000", "offsets.topic.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0", **extra}
        node.config_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        nodes.append(node)
    for node in nodes:
        node.start()
    return nodes


@pytest.fixture
def certs(tmp_path: Path):
    directory = tmp_path / "certs"
    directory.mkdir()
    return make_certificates(directory)


def _produce_and_consume(nodes, client_conf: dict, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **client_conf})
    admin.create_topics([NewTopic("secured", 3, 3, config={"min.insync.replicas": "3"})]
                        )["secured"].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, **client_conf, "acks": "all",
                         "message.timeout.ms": 30000})
    for i in range(60):
        producer.produce("secured", f"v{i}".encode(), key=str(i).encode())
    assert producer.flush(40) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, **client_conf, "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["secured"])
    seen: set[bytes] = set()
    try:
        wait_for(lambda: _poll(consumer, seen) >= 60, 60, "60 records consumed", nodes)
        assert seen == {f"v{i}".encode() for i in range(60)}
        assert consumer.commit(asynchronous=False)  # through the group's coordinator
    finally:
        consumer.close()


def _poll(consumer: Consumer, seen: set[bytes]) -> int:
    message = consumer.poll(0.5)
    if message is not None and message.error() is None:
        seen.add(message.value())
    return len(seen)


def _broker_ports(bootstrap: str, conf: dict) -> dict[int, int]:
    brokers = AdminClient({"bootstrap.servers": bootstrap, **conf}).list_topics(
        timeout=20).brokers
    return {b.id: b.port for b in brokers.values()}


def test_a_sasl_ssl_client_listener_and_a_plaintext_inter_broker_listener(
        tmp_path: Path, certs) -> None:
    nodes = _cluster(tmp_path, "SASL_SSL", "PLAINTEXT", {
        "ssl.keystore.location": str(certs.server),
        "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": JAAS})
    try:
        wait_for(lambda: all_unfenced(nodes), 60, "three live brokers", nodes)
        secure = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                  "sasl.username": "alice", "sasl.password": "alice-pw",
                  "ssl.ca.location": str(certs.ca)}
        client = f"127.0.0.1:{nodes[0].client_port}"
        # Each listener's clients are told that listener's endpoints of every broker (once
        # the answering broker's own image lists them all).
        wait_for(lambda: _broker_ports(client, secure) == {
            n.node_id: n.client_port for n in nodes}, 30, "the client listener's map", nodes)
        internal = f"127.0.0.1:{nodes[1].kafka_port}"
        wait_for(lambda: _broker_ports(internal, {}) == {
            n.node_id: n.kafka_port for n in nodes}, 30, "the internal listener's map", nodes)
        _produce_and_consume(nodes, secure, client)
        wrong = {**secure, "sasl.password": "guess"}
        errors: list = []
        refused = Producer({"bootstrap.servers": client, **wrong, "error_cb": errors.append,
                            "message.timeout.ms": 5000})
        refused.produce("secured", b"x")
        refused.flush(8)
        assert any("uthentication" in str(e) for e in errors), errors
    finally:
        for node in nodes:
            node.kill()


def test_followers_log_in_to_a_sasl_ssl_inter_broker_listener(tmp_path: Path,
                                                              certs) -> None:
    """INTERNAL is SASL_SSL: a follower fetches only after TLS (the truststore checks the
    leader's certificate) and a PLAIN login with the jaas config's username/password."""
    nodes = _cluster(tmp_path, "PLAINTEXT", "SASL_SSL", {
        "ssl.keystore.location": str(certs.server),
        "ssl.truststore.location": str(certs.ca),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": JAAS})
    try:
        wait_for(lambda: all_unfenced(nodes), 60, "three live brokers", nodes)
        _produce_and_consume(nodes, {}, f"127.0.0.1:{nodes[2].client_port}")
    finally:
        for node in nodes:
            node.kill()


def test_a_wrong_inter_broker_password_stops_replication_and_says_why(
        tmp_path: Path, certs) -> None:
    """The brokers' own credential is wrong: the followers cannot fetch, so the ISR
    shrinks to the leader alone, and the logs name the refused inter-broker login."""
    wrong = JAAS.replace('password="broker-pw" user_', 'password="nope" user_')
    nodes = _cluster(tmp_path, "PLAINTEXT", "SASL_PLAINTEXT", {
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": wrong})
    try:
        wait_for(lambda: all_unfenced(nodes), 60, "three live brokers", nodes)
        bootstrap = f"127.0.0.1:{nodes[0].client_port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("stuck", 1, 3)])["stuck"].result(timeout=30)
        wait_for(lambda: any("refused this broker's inter-broker login" in n.output()
                             for n in nodes), 30, "the refused login logged", nodes)

        def isr() -> tuple[int, list[int]]:
            found = admin.list_topics("stuck", timeout=10).topics["stuck"].partitions[0]
            return found.leader, sorted(found.isrs)
        wait_for(lambda: isr()[1] == [isr()[0]], 30, "the ISR shrunk to the leader", nodes)
    finally:
        for node in nodes:
            node.kill()
