"""``ferry broker --config`` with KRaft settings: three processes form a cluster that
unmodified clients use as a Kafka cluster. Metadata is the same from every broker (leaders,
replicas, ISR, leader epochs); topics are created through any broker, by the admin client
or ``ferry topics --replication-factor``; kafka-python produces and consumes across the
partition leaders; acks=all below min.insync.replicas is NOT_ENOUGH_REPLICAS; a bad
cluster setting is one line naming the key; ``ferry up --brokers 3`` runs a local
cluster until interrupted."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_process import all_unfenced, running_cluster, wait_for
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import NotEnoughReplicasError
from kafka.protocol.consumer import OffsetForLeaderEpochRequest
from kafka_wire import WireClient

SETTINGS = {"replica.lag.time.max.ms": "2000", "offsets.topic.num.partitions": "3",
            "replica.fetch.wait.max.ms": "200"}


@pytest.fixture
def cluster(tmp_path: Path):
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        yield nodes


def _layout(port: int, topic: str) -> dict[int, tuple[int, list[int], list[int]]] | None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    if found is None or found.error is not None:
        return None
    return {p.id: (p.leader, sorted(p.replicas), sorted(p.isrs))
            for p in found.partitions.values()}


def test_metadata_and_topic_creation_through_any_broker(cluster, tmp_path: Path) -> None:
    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[1].kafka_port}"})
    admin.create_topics([NewTopic("spread", 6, 3)])["spread"].result(timeout=30)
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic("too-wide", 1, 4)])["too-wide"].result(timeout=30)
    assert "INVALID_REPLICATION_FACTOR" in str(refused.value)

    layouts = [wait_for(lambda n=n: _layout(n.kafka_port, "spread"), 20, "metadata", nodes)
               for n in nodes]
    assert layouts[0] == layouts[1] == layouts[2]
    assert {leader for leader, _, _ in layouts[0].values()} == {1, 2, 3}  # spread out
    assert all(replicas == [1, 2, 3] for _, replicas, _ in layouts[0].values())
    # OffsetForLeaderEpoch: the leader answers where epoch 0 ends; a follower refuses.
    # (A broker answers as leader once it has applied the metadata, as in Kafka.)
    leader = layouts[0][0][0]
    for node in nodes:
        expected = (0, 0, 0) if node.node_id == leader else (6, -1, -1)
        wait_for(lambda node=node, expected=expected: _offset_for_leader_epoch(
            node.kafka_port, "spread", 0, 0) == expected, 20,
            f"broker {node.node_id} to answer {expected}", nodes)
    brokers = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[2].kafka_port}"}
                          ).list_topics(timeout=10).brokers
    assert {b.id: b.port for b in brokers.values()} == {n.node_id: n.kafka_port
                                                       for n in nodes}

    log_url = f"kafka://127.0.0.1:{nodes[2].kafka_port}"
    created = subprocess.run(
        [sys.executable, "-m", "core.cli", "topics", "--log", log_url, "create", "cli-made",
         "--partitions", "2", "--replication-factor", "3"],
        capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    described = wait_for(lambda: _describe(log_url, "cli-made"), 30, "describe", nodes)
    assert "ReplicationFactor: 3" in described
    assert described.count("Isr: ") == 2


def _offset_for_leader_epoch(port: int, topic: str, partition: int, epoch: int
                             ) -> tuple[int, int, int]:
    request_class = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    client = WireClient(port)
    try:
        p = client.call(OffsetForLeaderEpochRequest(replica_id=-1, topics=[request_class(
            topic=topic, partitions=[request_class.OffsetForLeaderPartition(
                partition=partition, current_leader_epoch=epoch, leader_epoch=epoch)])]),
            4).topics[0].partitions[0]
    finally:
        client.close()
    return p.error_code, p.leader_epoch, p.end_offset


def _describe(log_url: str, topic: str) -> str | None:
    done = subprocess.run([sys.executable, "-m", "core.cli", "topics", "--log", log_url,
                           "describe", topic], capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or done.stdout.count(",") < 4:  # every ISR complete
        return None
    return done.stdout


def test_kafka_python_produces_and_consumes_across_the_leaders(cluster) -> None:
    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    bootstrap = [f"127.0.0.1:{n.kafka_port}" for n in nodes]
    admin = AdminClient({"bootstrap.servers": bootstrap[0]})  # alive until the result
    admin.create_topics([NewTopic("kp", 3, 3)])["kp"].result(timeout=30)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    futures = [producer.send("kp", value=f"v{i}".encode(), partition=i % 3)
               for i in range(300)]
    producer.flush(30)
    offsets = [f.get(timeout=30) for f in futures]
    producer.close()
    assert {m.partition for m in offsets} == {0, 1, 2}
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             group_id="kp-readers", consumer_timeout_ms=20000)
    consumer.subscribe(["kp"])
    seen = set()
    deadline = time.monotonic() + 60
    for message in consumer:
        seen.add(message.value)
        if len(seen) == 300 or time.monotonic() > deadline:
            break
    consumer.commit()
    consumer.close()
    assert seen == {f"v{i}".encode() for i in range(300)}


def test_acks_all_below_min_insync_replicas_is_not_enough_replicas(cluster) -> None:
    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[0].kafka_port}"})
    admin.create_topics([NewTopic("strict", 1, 3, config={"min.insync.replicas": "3"})]
                        )["strict"].result(timeout=30)
    leader, _, _ = wait_for(lambda: _layout(nodes[0].kafka_port, "strict"), 20, "metadata",
                            nodes)[0]
    follower = next(n for n in nodes if n.node_id != leader)
    follower.kill()
    survivors = [n for n in nodes if n is not follower]

    def shrunk() -> bool:
        # In every survivor's view, the leader's above all: a leader that has not applied
        # the shrink yet waits for the dead follower until the request times out.
        for node in survivors:
            topic = (node.describe() or {}).get("topics", {}).get("strict")
            if not topic or len(topic["partitions"][0]["isr"]) != 2:
                return False
        return True
    wait_for(shrunk, 30, "the ISR to shrink", nodes)
    producer = KafkaProducer(bootstrap_servers=[f"127.0.0.1:{n.kafka_port}"
                                                for n in survivors],
                             acks="all", retries=0, request_timeout_ms=10000)
    with pytest.raises(NotEnoughReplicasError):
        producer.send("strict", b"x", partition=0).get(timeout=20)
    producer.close()
    # Consumers see nothing that was not committed to min.insync.replicas replicas.
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{survivors[0].kafka_port}",
                         "group.id": "strict-readers"})
    low, high = consumer.get_watermark_offsets(TopicPartition("strict", 0), timeout=10)
    consumer.close()
    assert (low, high) == (0, 0)


def test_a_bad_cluster_setting_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "node.properties"
    config.write_text("process.roles=broker,controller\n"
                      "controller.quorum.voters=1@127.0.0.1:9193\n"
                      "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9193\n"
                      "controller.listener.names=CONTROLLER\n"
                      f"log.dirs={tmp_path / 'data'}\n")
    done = subprocess.run([sys.executable, "-m", "core.cli", "broker", "--config",
                           str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "node.id" in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_ferry_up_brokers_3_runs_a_local_cluster_until_interrupted(tmp_path: Path) -> None:
    from broker_process import free_port

    base = free_port()
    while any(_in_use(base + i) for i in range(6)):
        base = free_port()
    up = subprocess.Popen([sys.executable, "-m", "core.cli", "up", "--brokers", "3",
                           "--listen", f"127.0.0.1:{base}", "--data-dir", str(tmp_path)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        ports = [base, base + 2, base + 4]

        def layout() -> dict | None:
            try:
                return _layout(ports[2], "demo")
            except KafkaException:
                return None

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[0]}"})

        def three_brokers() -> bool:
            try:
                return len(admin.list_topics(timeout=5).brokers) == 3
            except KafkaException:  # still starting
                return False
        wait_for(three_brokers, 120, "three brokers from ferry up")
        admin.create_topics([NewTopic("demo", 3)])["demo"].result(timeout=30)
        found = wait_for(layout, 30, "the demo topic")
        assert all(len(replicas) == 3 for _, replicas, _ in found.values())
    finally:
        up.send_signal(signal.SIGINT)
        _, err = up.communicate(timeout=60)
    assert up.returncode == 0, err.decode(errors="replace")[-2000:]
    assert b"3-broker cluster" in err


def _in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _metadata_leaders(port: int, topic: str) -> list[int] | None:
    """The leaders one broker's own Metadata names for ``topic`` (None: unknown there)."""
    from kafka.protocol.metadata import MetadataRequest

    client = WireClient(port)
    try:
        answer = client.call(MetadataRequest[1](topics=[topic]), 1)
    finally:
        client.close()
    (found,) = answer.topics
    if found[0] != 0:  # error_code
        return None
    return [p[2] for p in found[3]]  # partition metadata: (error, id, leader, ...)


def test_a_topic_the_kafka_backend_created_is_known_to_every_broker_at_once(cluster
                                                                          ) -> None:
    """Brokers apply the controller's records a moment apart; the kafka:// backend's
    create_topic returns once every broker shows the topic, so a producer or a Connect
    worker asking any broker right after finds it (the demo's CDC task failed on
    UNKNOWN_TOPIC_OR_PARTITION from a broker a few milliseconds behind)."""
    from core.backends import open_backend

    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    with open_backend(f"kafka://127.0.0.1:{nodes[0].kafka_port}") as backend:
        for i in range(8):
            backend.create_topic(f"fresh-{i}", 2, replication_factor=3)
            for node in nodes:
                leaders = _metadata_leaders(node.kafka_port, f"fresh-{i}")
                assert leaders is not None and min(leaders) >= 1, (node.node_id, leaders)


def test_group_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator(
        cluster) -> None:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup sent (on the wire, as a client with
    a stale coordinator would) to a broker that does not lead the group's
    __consumer_offsets partition answer NOT_COORDINATOR (16), as Kafka's do; the
    coordinator FindCoordinator names accepts the same JoinGroup."""
    from kafka.protocol.consumer.group import (
        HeartbeatRequest,
        JoinGroupRequest,
        LeaveGroupRequest,
        SyncGroupRequest,
    )
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)

    def coordinator() -> int | None:
        client = WireClient(nodes[0].kafka_port)
        try:
            answer = client.call(FindCoordinatorRequest(key="stale-group", key_type=0), 2)
        finally:
            client.close()
        return answer.node_id if answer.error_code == 0 else None
    leader = wait_for(coordinator, 30, "the group's coordinator", nodes)
    join = {"group_id": "stale-group", "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 30000, "member_id": "", "group_instance_id": None,
            "protocol_type": "consumer", "protocols": [
                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"m")]}

    def join_at(node) -> int:
        client = WireClient(node.kafka_port)
        try:
            return client.call(JoinGroupRequest(**join), 5).error_code
        finally:
            client.close()
    # MEMBER_ID_REQUIRED: a real coordinator (COORDINATOR_LOAD_IN_PROGRESS, 14, while it
    # applies its leadership, which clients retry).
    coordinating = next(n for n in nodes if n.node_id == leader)
    wait_for(lambda: join_at(coordinating) == 79, 20, "the coordinator to serve", nodes)
    for node in nodes:
        if node.node_id == leader:
            continue
        # A broker that has not applied __consumer_offsets yet answers
        # COORDINATOR_NOT_AVAILABLE (15), which clients retry; then NOT_COORDINATOR.
        wait_for(lambda node=node: join_at(node) != 15, 20,
                 f"node {node.node_id} to apply __consumer_offsets", nodes)
        client = WireClient(node.kafka_port)
        try:
            joined = client.call(JoinGroupRequest(**join), 5)
            assert joined.error_code == 16, node.node_id
            assert client.call(SyncGroupRequest(
                group_id="stale-group", generation_id=1, member_id="m",
                group_instance_id=None, assignments=[]), 3).error_code == 16
            assert client.call(HeartbeatRequest(
                group_id="stale-group", generation_id=1, member_id="m",
                group_instance_id=None), 3).error_code == 16
            assert client.call(LeaveGroupRequest(
                group_id="stale-group", members=[LeaveGroupRequest.MemberIdentity(
                    member_id="m", group_instance_id=None)]), 3).error_code == 16
        finally:
            client.close()


def test_delete_topics_removes_every_replica_and_a_new_topic_of_that_name_starts_empty(
        cluster) -> None:
    """DeleteTopics through any broker: the controller removes the topic, every broker
    deletes its replicas (their directories go), Metadata no longer names it anywhere;
    a topic created again with that name starts empty; unknown and internal topics are
    refused with Kafka's errors."""
    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[0].kafka_port}"})
    admin.create_topics([NewTopic("doomed", 2, 3)])["doomed"].result(timeout=30)
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{nodes[1].kafka_port}",
                             acks="all")
    for i in range(20):
        producer.send("doomed", f"old-{i}".encode())
    producer.flush(30)
    producer.close()
    wait_for(lambda: all(any((n.data_dir / f"doomed-{p}").is_dir() for p in (0, 1))
                         for n in nodes), 20, "replicas on every broker", nodes)

    deleter = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[2].kafka_port}"})
    deleter.delete_topics(["doomed"])["doomed"].result(timeout=30)
    for node in nodes:
        wait_for(lambda node=node: _metadata_leaders(node.kafka_port, "doomed") is None,
                 20, f"broker {node.node_id} to forget the topic", nodes)
        wait_for(lambda node=node: not any((node.data_dir / f"doomed-{p}").exists()
                                           for p in (0, 1)),
                 20, f"broker {node.node_id}'s replicas deleted", nodes)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        deleter.delete_topics(["doomed"])["doomed"].result(timeout=30)
    with pytest.raises(KafkaException, match="TOPIC_EXCEPTION"):
        deleter.delete_topics(["__consumer_offsets"])["__consumer_offsets"].result(timeout=30)

    admin.create_topics([NewTopic("doomed", 1, 3)])["doomed"].result(timeout=30)
    for node in nodes:  # brokers learn the new topic a moment apart
        wait_for(lambda node=node: min(_metadata_leaders(node.kafka_port, "doomed")
                                       or [-1]) >= 1,
                 20, f"broker {node.node_id} to know the new topic", nodes)
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{nodes[0].kafka_port}",
                         "group.id": "after-delete", "enable.auto.commit": False})
    watermarks: list[tuple[int, int]] = []

    def read_watermarks() -> bool:
        # A broker's Metadata can name the new leader a moment before that leader's replica
        # manager has taken the partition on; it answers NOT_LEADER_OR_FOLLOWER meanwhile,
        # which Kafka clients retry (get_watermark_offsets does not, so the test does).
        try:
            watermarks.append(consumer.get_watermark_offsets(TopicPartition("doomed", 0),
                                                             timeout=5))
        except KafkaException as exc:
            if "NOT_LEADER" not in str(exc).upper().replace(" ", "_"):
                raise
            return False
        return True
    try:
        wait_for(read_watermarks, 20, "the new leader to answer for the new topic", nodes)
    finally:
        consumer.close()
    assert watermarks[-1] == (0, 0)


def test_create_partitions_grows_a_topic_on_every_broker(cluster) -> None:
    """CreatePartitions through any broker: the controller places the new partitions (or
    takes the given assignment), each gets a leader and a full ISR, and records produced
    to them with acks=all are consumed; shrinking and the offsets topic are refused."""
    from confluent_kafka.admin import NewPartitions

    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[0].kafka_port}"})
    admin.create_topics([NewTopic("growing", 1, 3)])["growing"].result(timeout=30)
    grower = AdminClient({"bootstrap.servers": f"127.0.0.1:{nodes[1].kafka_port}"})
    grower.create_partitions([NewPartitions("growing", 3)])["growing"].result(timeout=30)
    grower.create_partitions([NewPartitions("growing", 4, [[3, 1, 2]])]
                             )["growing"].result(timeout=30)

    def grown() -> dict | None:
        layout = _layout(nodes[2].kafka_port, "growing")
        if not layout or len(layout) != 4:
            return None
        if any(len(isr) != 3 or leader < 1 for leader, _, isr in layout.values()):
            return None
        return layout
    layout = wait_for(grown, 30, "4 partitions, each with 3 in-sync replicas", nodes)
    assert layout[3][0] == 3  # the assignment's first broker leads
    assert all(replicas == [1, 2, 3] for _, replicas, _ in layout.values())
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{nodes[2].kafka_port}",
                             acks="all")
    for p in range(4):
        producer.send("growing", f"to-{p}".encode(), partition=p).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{nodes[0].kafka_port}",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.subscribe(["growing"])
    got = {m.value for m in consumer}
    consumer.close()
    assert got == {f"to-{p}".encode() for p in range(4)}
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        grower.create_partitions([NewPartitions("growing", 2)])["growing"].result(timeout=30)
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        grower.create_partitions([NewPartitions("__consumer_offsets", 9)]
                                 )["__consumer_offsets"].result(timeout=30)
