"""ACLs, SCRAM credentials and client quotas are cluster metadata: a change sent to any
broker (with the ``ferry acls|users|quotas`` commands) is committed by the active
controller and in force on every broker, and survives the active controller's SIGKILL.

Three combined nodes as subprocesses; clients log in on a SASL_PLAINTEXT listener (PLAIN
for ``admin`` and ``alice``, SCRAM for users made by ``ferry users``); the brokers
replicate over a PLAIN inter-broker listener as the super user ``broker``. Real clients
(librdkafka) show the effects: alice's writes to partitions led by each of the three
brokers, SCRAM logins bootstrapped from each broker alone, and librdkafka's own throttle
statistics.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from broker_process import free_port
from cluster_process import ClusterNodeProcess, wait_for
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from core.cli.main import main as ferry

pytestmark = pytest.mark.integration

_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required "
_USERS = 'user_admin="admin-pw" user_alice="alice-pw" user_broker="broker-pw"'
_JAAS = f'{_PLAIN}username="broker" password="broker-pw" {_USERS};'
RECORD = b"x" * 10_000


def _plain(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-pw"}


ADMIN, ALICE = _plain("admin"), _plain("alice")


def _node(node_id: int, tmp_path: Path, voters: str, controller_port: int
          ) -> ClusterNodeProcess:
    node = ClusterNodeProcess(node_id, tmp_path, voters, controller_port, {}, broker=True)
    node.client_port = free_port()
    settings = {
        "process.roles": "broker,controller", "node.id": str(node_id),
        "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
        "listeners": f"CLIENT://127.0.0.1:{node.client_port},"
                     f"INTERNAL://127.0.0.1:{node.kafka_port},"
                     f"CONTROLLER://127.0.0.1:{controller_port}",
        "listener.security.protocol.map":
            "CLIENT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL", "log.dirs": str(node.data_dir),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": _JAAS,
        "listener.name.client.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.client.plain.sasl.jaas.config": _JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:broker",
        "controller.quorum.election.timeout.ms": "500",
        "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
        "replica.lag.time.max.ms": "3000", "offsets.topic.num.partitions": "1",
        "quota.window.num": "3"}
    node.config_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return node


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("cluster-security")
    ports = [free_port() for _ in range(3)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    nodes = [_node(i + 1, tmp_path, voters, ports[i]) for i in range(3)]
    for node in nodes:
        node.start()
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text("".join(f"{k}={v}\n" for k, v in ADMIN.items()))
    try:
        wait_for(lambda: _live(nodes) == 3, 60, "three live brokers", nodes)
        yield nodes, str(admin_config), tmp_path
    finally:
        for node in nodes:
            node.kill()


def _live(nodes) -> int:
    for node in nodes:
        view = node.alive and node.describe()
        if view:
            return sum(not b["fenced"] for b in view["brokers"].values())
    return 0


def _at(node: ClusterNodeProcess) -> str:
    return f"127.0.0.1:{node.client_port}"


def _cli(*args: str) -> None:
    assert ferry(list(args)) == 0, args


def _create_topic(nodes, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": _at(nodes[0]), **ADMIN})  # alive until done
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(timeout=30)


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    found = AdminClient({"bootstrap.servers": bootstrap, **ADMIN}).list_topics(
        topic, timeout=20).topics[topic]
    return {p: found.partitions[p].leader for p in found.partitions}


def _write_each_partition(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Alice writes one record to each partition: partition -> Kafka error code (0 ok)."""
    codes: dict[int, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap, **ALICE,
                         "message.timeout.ms": 8000, "topic.metadata.refresh.interval.ms": 500})

    def report(err, msg) -> None:
        codes[msg.partition()] = 0 if err is None else err.code()

    for p in range(partitions):
        try:
            producer.produce(topic, b"v", partition=p, on_delivery=report)
        except Exception as exc:  # librdkafka may refuse at once: a known failure
            codes[p] = getattr(exc.args[0], "code", lambda: -1)()
    producer.flush(15)
    return codes


def _logs_in(bootstrap: str, user: str, password: str) -> bool:
    """A SCRAM login to exactly this broker (its only bootstrap address) succeeds."""
    errors: list = []
    admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user,
                         "sasl.password": password, "error_cb": errors.append,
                         "log_level": 0})
    try:
        admin.list_topics(timeout=2.5)
    except Exception:
        return False
    return not errors


def _acls_listed(node: ClusterNodeProcess, admin_config: str, capsys, topic: str) -> str:
    """``ferry acls list`` through this broker alone ("" if it cannot answer)."""
    capsys.readouterr()
    code = ferry(["acls", "list", "--bootstrap-server", _at(node), "--topic", topic,
                  "--command-config", admin_config])
    out = capsys.readouterr().out
    return out if code == 0 else ""


def test_an_acl_added_through_one_broker_is_enforced_by_every_broker(cluster, capsys) -> None:
    nodes, admin_config, _ = cluster
    _create_topic(nodes, "acl-t", 3)
    # Three partitions, one led by each broker: a write to each asks each broker.
    wait_for(lambda: sorted(_leaders(_at(nodes[0]), "acl-t").values()) == [1, 2, 3], 20,
             "a leader on each broker", nodes)
    denied = KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert set(_write_each_partition(_at(nodes[1]), "acl-t", 3).values()) == {denied}

    _cli("acls", "add", "--bootstrap-server", _at(nodes[0]), "--allow-principal",
         "User:alice", "--operation", "Write", "--topic", "acl-t",
         "--command-config", admin_config)
    wait_for(lambda: _write_each_partition(_at(nodes[2]), "acl-t", 3) == {0: 0, 1: 0, 2: 0},
             20, "alice's writes allowed by every leader", nodes)
    for node in nodes:  # DescribeAcls answers from each broker's committed image
        assert "principal=User:alice, host=*, operation=WRITE" in _acls_listed(
            node, admin_config, capsys, "acl-t")

    _cli("acls", "remove", "--bootstrap-server", _at(nodes[2]), "--topic", "acl-t",
         "--command-config", admin_config)
    wait_for(lambda: set(_write_each_partition(_at(nodes[1]), "acl-t", 3).values())
             == {denied}, 20, "alice denied again by every leader", nodes)
    for node in nodes:  # each broker answers from its own image, applied a moment apart
        wait_for(lambda node=node: "User:alice" not in _acls_listed(node, admin_config, capsys,
                                                                    "acl-t"),
                 10, f"broker {node.node_id} to list the ACL no more", nodes)


def test_a_quota_set_through_one_broker_throttles_on_another(cluster, capsys) -> None:
    nodes, admin_config, _ = cluster
    _create_topic(nodes, "quota-t", 1)
    leader = wait_for(lambda: max(_leaders(_at(nodes[0]), "quota-t").values(), default=0),
                      20, "a leader", nodes)
    elsewhere = [n for n in nodes if n.node_id != leader]
    _cli("quotas", "alter", "--bootstrap-server", _at(elsewhere[0]), "--client-id", "noisy",
         "--add-config", "producer_byte_rate=100000", "--command-config", admin_config)
    wait_for(lambda: "client-id 'noisy' are producer_byte_rate=100000" in _quotas_listed(
        nodes[leader - 1], admin_config, capsys), 10, "the quota on the leader", nodes)
    # The describe above may be answered by any broker the admin client picks; the leader
    # applies the quota from its own image a moment apart, so it is given a bounded time.
    wait_for(lambda: _produce_throttle(_at(nodes[leader - 1]), "quota-t", 40) > 0, 20,
             "the leader to throttle a client over a quota set through another broker", nodes)

    # Several bootstrap brokers, as for any Kafka tool: whichever answers forwards it.
    _cli("quotas", "alter", "--bootstrap-server", f"{_at(elsewhere[1])},{_at(elsewhere[0])}",
         "--client-id", "noisy", "--delete-config", "producer_byte_rate",
         "--command-config", admin_config)
    wait_for(lambda: _quotas_listed(nodes[leader - 1], admin_config, capsys) == "", 10,
             "no quota left on the quorum", nodes)
    # As above: the leader drops the quota from its own image a moment after the describe.
    wait_for(lambda: _produce_throttle(_at(nodes[leader - 1]), "quota-t", 40) == 0, 20,
             "the leader to stop throttling once the quota is deleted", nodes)


def _quotas_listed(node: ClusterNodeProcess, admin_config: str, capsys) -> str | None:
    """``ferry quotas describe --client-id noisy`` through this broker alone."""
    capsys.readouterr()
    code = ferry(["quotas", "describe", "--bootstrap-server", _at(node), "--client-id",
                  "noisy", "--command-config", admin_config])
    out = capsys.readouterr().out
    return out if code == 0 else None


def _produce_throttle(bootstrap: str, topic: str, count: int) -> int:
    """As client id ``noisy``, produce ``count`` records of 10 kB: the largest throttle
    time (ms) librdkafka's statistics reported."""
    worst = [0]

    def stats(text: str) -> None:
        for b in json.loads(text)["brokers"].values():
            worst[0] = max(worst[0], b["throttle"]["max"])

    producer = Producer({"bootstrap.servers": bootstrap, **ADMIN, "client.id": "noisy",
                         "linger.ms": 0, "batch.size": 20_000, "statistics.interval.ms": 100,
                         "stats_cb": stats})
    for _ in range(count):
        producer.produce(topic, RECORD)
        producer.poll(0)
    assert producer.flush(60) == 0
    for _ in range(3):  # the last statistics window
        producer.poll(0.15)
    return worst[0]


def test_scram_users_and_acls_log_in_everywhere_and_outlive_the_active_controller(
        cluster, capsys) -> None:
    nodes, admin_config, tmp_path = cluster
    password = tmp_path / "carol.pw"
    password.write_text("carol-secret\n")
    _cli("users", "set", "carol", "--mechanism", "SCRAM-SHA-256", "--password-file",
         str(password), "--log", f"kafka://{_at(nodes[1])}", "--command-config", admin_config)
    _cli("acls", "add", "--bootstrap-server", _at(nodes[1]), "--allow-principal",
         "User:carol", "--operation", "Read", "--topic", "carol-",
         "--resource-pattern-type", "prefixed", "--command-config", admin_config)
    for node in nodes:
        wait_for(lambda n=node: _logs_in(_at(n), "carol", "carol-secret"), 20,
                 f"carol logged in on broker {node.node_id}", nodes)
    assert not _logs_in(_at(nodes[2]), "carol", "guess")

    controller = wait_for(lambda: (nodes[0].describe() or {}).get("controller_id"), 10,
                          "an active controller", nodes)
    nodes[controller - 1].kill()
    survivors = [n for n in nodes if n.node_id != controller]
    wait_for(lambda: (survivors[0].describe() or {}).get("controller_id") not in
             (None, controller), 20, "a new active controller", nodes)
    for node in survivors:
        assert _logs_in(_at(node), "carol", "carol-secret")
        assert "principal=User:carol, host=*, operation=READ" in _acls_listed(
            node, admin_config, capsys, "carol-")

    # The new controller takes changes, and the killed node gets them by replaying the log.
    _cli("users", "delete", "carol", "--log", f"kafka://{_at(survivors[0])}",
         "--command-config", admin_config)
    for node in survivors:
        wait_for(lambda n=node: not _logs_in(_at(n), "carol", "carol-secret"), 20,
                 f"carol refused by broker {node.node_id}", nodes)
    restarted = nodes[controller - 1]
    restarted.start()
    wait_for(lambda: "User:carol" in _acls_listed(restarted, admin_config, capsys, "carol-"),
             30, "the restarted broker's ACLs, replayed from the metadata log", nodes)
    # Listed only once caught up past its new registration, so past the deletion too.
    assert not _logs_in(_at(restarted), "carol", "carol-secret")
