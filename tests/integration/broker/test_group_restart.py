"""Consumer groups survive a broker restart: Kafka's group metadata in ``__consumer_offsets``.

A real consumer (confluent-kafka, kafka-python) consumes and commits with a group; the
broker is restarted (SIGTERM, or SIGKILL) while the consumer keeps running. The group's
last generation comes back from the log, so the consumer keeps its member id, its next
commits succeed (no UNKNOWN_MEMBER_ID) and no record is delivered twice.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka.structs import OffsetAndMetadata, TopicPartition

DEADLINE_S = 60.0
RECORDS = 40
CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "4"}


def _setup_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, key=str(i % 2).encode(), value=str(i).encode())
    assert producer.flush(30) == 0


def _member_ids(bootstrap: str, group: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(30)
    return sorted(m.member_id for m in described.members)


def _restart(broker, how: str) -> None:
    if how == "sigkill":
        broker.kill()
        broker.start()
    else:
        broker.restart()


def _consume(consumer: Consumer, want: int, seen: list[int], errors: list[KafkaError]) -> None:
    """Poll until ``want`` records, committing each synchronously, as an application
    that must not lose its place does."""
    deadline = time.monotonic() + DEADLINE_S
    while len(seen) < want and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            errors.append(message.error())
            continue
        seen.append(int(message.value()))
        try:
            consumer.commit(message=message, asynchronous=False)
        except KafkaException as exc:
            errors.append(exc.args[0])


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_confluent_consumer_keeps_its_membership_across_a_broker_restart(broker_factory, how):
    broker = broker_factory(CONFIG)
    _setup_topic(broker.bootstrap, "orders")
    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": "billing",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 30000, "heartbeat.interval.ms": 1000,
    })
    seen: list[int] = []
    errors: list[KafkaError] = []
    try:
        consumer.subscribe(["orders"])
        _consume(consumer, RECORDS // 2, seen, errors)
        assert len(seen) == RECORDS // 2 and not errors
        before = _member_ids(broker.bootstrap, "billing")
        assert before == [consumer.memberid()]

        _restart(broker, how)

        # The group came back Stable with the same member, before the client rejoined.
        assert _member_ids(broker.bootstrap, "billing") == before
        _consume(consumer, RECORDS, seen, errors)
        # Heartbeats and commits of the restored generation go on: the same member id.
        assert consumer.memberid() == before[0]
        assert _member_ids(broker.bootstrap, "billing") == before
    finally:
        consumer.close()
    unknown_member = [e for e in errors if e.code() == KafkaError.UNKNOWN_MEMBER_ID]
    assert not unknown_member, errors
    # Every record exactly once: nothing redelivered by a rejoin from an older commit.
    assert sorted(seen) == list(range(RECORDS))
    assert len(seen) == RECORDS


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_kafka_python_consumer_commits_after_a_broker_restart(broker_factory, how):
    broker = broker_factory(CONFIG)
    _setup_topic(broker.bootstrap, "payments")
    consumer = KafkaConsumer(
        "payments", bootstrap_servers=broker.bootstrap, group_id="ledger",
        enable_auto_commit=False, auto_offset_reset="earliest",
        session_timeout_ms=30000, heartbeat_interval_ms=1000, request_timeout_ms=40000)
    seen: list[int] = []

    def consume(want: int) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < want and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    seen.append(int(record.value))
                    # Raises CommitFailedError if the group forgot this member.
                    consumer.commit({TopicPartition(tp.topic, tp.partition):
                                     OffsetAndMetadata(record.offset + 1, "", -1)})

    try:
        consume(RECORDS // 2)
        assert len(seen) >= RECORDS // 2
        before = _member_ids(broker.bootstrap, "ledger")
        assert len(before) == 1

        _restart(broker, how)

        assert _member_ids(broker.bootstrap, "ledger") == before
        consume(RECORDS)
        assert _member_ids(broker.bootstrap, "ledger") == before
    finally:
        consumer.close()
    assert sorted(seen) == list(range(RECORDS))
