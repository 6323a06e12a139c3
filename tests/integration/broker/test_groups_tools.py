"""Group features beyond the basic rebalance, with real tools against a ``ferry broker``:
kcat as a group member, static membership, offsets across a broker restart, and the admin
clients' group listing, description and deletion."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic

pytestmark = pytest.mark.integration

WAIT_S = 60.0  # a bound on each wait, never a timing under test
SESSION_MS, HEARTBEAT_MS = 6000, 300


@pytest.fixture
def kp_admin(broker: Any) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield admin
    admin.close()


def make_topic(admin: KafkaAdminClient, topic: str, partitions: int) -> None:
    admin.create_topics([KpNewTopic(topic, partitions, 1)])


def produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for partition, value in values:
            producer.send(topic, value=value, partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close()


def batch(tag: str, partitions: int, per_partition: int) -> list[tuple[int, bytes]]:
    return [(p, f"{tag}-p{p}-{i}".encode()) for p in range(partitions)
            for i in range(per_partition)]


def consume(poll: Callable[[], list[tuple[int, bytes]]], count: int) -> list[tuple[int, bytes]]:
    """Poll until ``count`` records arrived (or the bound runs out)."""
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count and time.monotonic() < deadline:
        got.extend(poll())
    return got


def confluent_consumer(bootstrap: str, group: str, topic: str, **extra: Any) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                  **extra})
    c.subscribe([topic])
    return c


def confluent_poll(c: Consumer) -> Callable[[], list[tuple[int, bytes]]]:
    def poll() -> list[tuple[int, bytes]]:
        return [(m.partition(), m.value()) for m in c.consume(100, 0.2) if m.error() is None]
    return poll


def kafka_python_consumer(bootstrap: str, group: str, topic: str) -> KafkaConsumer:
    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)


def kafka_python_poll(c: KafkaConsumer) -> Callable[[], list[tuple[int, bytes]]]:
    def poll() -> list[tuple[int, bytes]]:
        return [(tp.partition, r.value) for tp, rs in c.poll(timeout_ms=200).items()
                for r in rs]
    return poll


def test_kcat_consumes_as_a_group_member(broker: Any, kp_admin: KafkaAdminClient) -> None:
    make_topic(kp_admin, "kc", 2)
    sent = batch("k", 2, 10)
    produce(broker.bootstrap, "kc", sent)
    done = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
         "-c", str(len(sent)), "-f", "%p %s\\n", "-q", "kc"],
        capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    got = sorted((int(p), v.encode()) for p, v in
                 (line.split(" ", 1) for line in done.stdout.splitlines() if line))
    assert got == sorted(sent)
    # kcat auto-commits and commits again when it closes.
    offsets = kp_admin.list_group_offsets({"kcat-group": None})["kcat-group"]
    assert {tp: o.offset for tp, o in offsets.items()} == {
        TopicPartition("kc", 0): 10, TopicPartition("kc", 1): 10}


def test_static_member_comes_back_without_a_rebalance(broker: Any,
                                                      kp_admin: KafkaAdminClient) -> None:
    make_topic(kp_admin, "st", 2)
    produce(broker.bootstrap, "st", batch("one", 2, 5))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    first = confluent_consumer(broker.bootstrap, "static", "st", **{"group.instance.id": "h1"})
    assert len(consume(confluent_poll(first), 10)) == 10
    first.commit(asynchronous=False)
    before = admin.describe_consumer_groups(["static"])["static"].result(30)
    [member] = before.members
    assert member.group_instance_id == "h1"
    first.close()
    # A static member does not leave when it closes: its session keeps its place (and
    # its assignment) for whoever comes back with the same group.instance.id.
    kept = admin.describe_consumer_groups(["static"])["static"].result(30)
    assert kept.state == ConsumerGroupState.STABLE
    assert [m.member_id for m in kept.members] == [member.member_id]

    second_batch = batch("two", 2, 5)
    produce(broker.bootstrap, "st", second_batch)
    second = confluent_consumer(broker.bootstrap, "static", "st", **{"group.instance.id": "h1"})
    try:
        got = consume(confluent_poll(second), 10)
        assert sorted(got) == sorted(second_batch)
        after = admin.describe_consumer_groups(["static"])["static"].result(30)
        [replacement] = after.members
        assert replacement.group_instance_id == "h1"
        assert replacement.member_id != member.member_id
        assert after.state == ConsumerGroupState.STABLE
    finally:
        second.close()


def test_committed_offsets_survive_a_broker_restart(broker: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    make_topic(admin, "durable", 2)
    admin.close()
    produce(broker.bootstrap, "durable", batch("before", 2, 5))
    c = kafka_python_consumer(broker.bootstrap, "restarts", "durable")
    assert len(consume(kafka_python_poll(c), 10)) == 10
    c.commit()
    c.close()

    broker.restart()
    after = batch("after", 2, 3)
    produce(broker.bootstrap, "durable", after)
    c = kafka_python_consumer(broker.bootstrap, "restarts", "durable")
    try:
        assert sorted(consume(kafka_python_poll(c), len(after))) == sorted(after)
    finally:
        c.close()


def test_admin_clients_list_describe_and_delete_groups(broker: Any,
                                                       kp_admin: KafkaAdminClient) -> None:
    make_topic(kp_admin, "watched", 2)
    produce(broker.bootstrap, "watched", batch("w", 2, 2))
    # "idle": committed offsets and no members.
    idle = kafka_python_consumer(broker.bootstrap, "idle", "watched")
    consume(kafka_python_poll(idle), 4)
    idle.commit()
    idle.close()
    live = confluent_consumer(broker.bootstrap, "live", "watched")
    try:
        assert len(consume(confluent_poll(live), 4)) == 4
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})

        listed = admin.list_consumer_groups().result(30)
        assert {g.group_id: g.state for g in listed.valid} == {
            "idle": ConsumerGroupState.EMPTY, "live": ConsumerGroupState.STABLE}
        stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(30)
        assert [g.group_id for g in stable.valid] == ["live"]

        described = admin.describe_consumer_groups(["live"])["live"].result(30)
        assert (described.state, described.partition_assignor) == (
            ConsumerGroupState.STABLE, "range")
        [member] = described.members
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1]
        kp_described = kp_admin.describe_groups(["live"])["live"]
        assert (kp_described["group_state"], kp_described["protocol_type"]) == (
            "Stable", "consumer")
        assert [g["group_id"] for g in kp_admin.list_groups(states_filter=["Empty"])] == [
            "idle"]

        deleted = admin.delete_consumer_groups(["idle", "live"])
        assert deleted["idle"].result(30) is None
        with pytest.raises(KafkaException) as info:
            deleted["live"].result(30)
        assert info.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        assert [g["group_id"] for g in kp_admin.list_groups()] == ["live"]
    finally:
        live.close()
