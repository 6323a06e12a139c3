"""Produce through real clients: errors reach the application, timestamps follow the topic's
message.timestamp.type, and large batches within max.message.bytes are stored whole."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    Producer,
    TopicPartition,
)
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError as KafkaPythonError

pytestmark = pytest.mark.integration

DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def bootstrap(module_broker) -> Iterator[str]:
    admin = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap)
    try:
        admin.create_topics([
            NewTopic("small", 1, 1, topic_configs={"max.message.bytes": "2000"}),
            NewTopic("stamped", 1, 1, topic_configs={"message.timestamp.type": "LogAppendTime"}),
            NewTopic("two-isr", 1, 1, topic_configs={"min.insync.replicas": "2"}),
            NewTopic("compacted", 1, 1, topic_configs={"cleanup.policy": "compact"}),
            NewTopic("large", 1, 1, topic_configs={"max.message.bytes": str(8 << 20)}),
        ])
    finally:
        admin.close()
    yield module_broker.bootstrap


def deliver(bootstrap: str, topic: str, value: bytes | None, key: bytes | None = None,
            **config: object) -> KafkaError | None:
    """Produce one record with confluent-kafka; the delivery error, or None."""
    outcome: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 10 << 20,
                         "retries": 0, **config})
    producer.produce(topic, value, key, partition=0,
                     on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(DEADLINE_S)
    assert len(outcome) == 1
    return outcome[0]


def read_one(bootstrap: str, topic: str, **config: object) -> object:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", **config})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                return msg
        raise AssertionError(f"nothing to read in {topic}")
    finally:
        consumer.close()


def test_errors_reach_the_producer(bootstrap: str) -> None:
    too_large = deliver(bootstrap, "small", b"x" * 5000)
    assert too_large is not None and too_large.code() == KafkaError.MSG_SIZE_TOO_LARGE
    keyless = deliver(bootstrap, "compacted", b"no key")
    assert keyless is not None and keyless.code() == KafkaError.INVALID_RECORD
    assert deliver(bootstrap, "compacted", b"v", key=b"k") is None
    not_enough = deliver(bootstrap, "two-isr", b"v", acks="all")
    assert not_enough is not None and not_enough.code() == KafkaError.NOT_ENOUGH_REPLICAS
    assert deliver(bootstrap, "two-isr", b"v", acks="1") is None


def test_kafka_python_default_producer_reports_errors(bootstrap: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=10 << 20,
                             retries=0)
    try:
        future = producer.send("small", b"x" * 5000, partition=0)
        with pytest.raises(KafkaPythonError) as info:
            future.get(DEADLINE_S)
        assert "MessageSizeTooLarge" in type(info.value).__name__
    finally:
        producer.close(DEADLINE_S)


def test_log_append_time_topics_stamp_the_broker_time(bootstrap: str) -> None:
    before_ms = int(time.time() * 1000)
    assert deliver(bootstrap, "stamped", b"v") is None
    msg = read_one(bootstrap, "stamped")
    kind, timestamp = msg.timestamp()  # type: ignore[attr-defined]
    assert kind == TIMESTAMP_LOG_APPEND_TIME and timestamp >= before_ms


def test_a_batch_larger_than_every_fetch_limit_is_still_delivered(bootstrap: str) -> None:
    value = bytes(range(256)) * (3 << 12)  # 3 MiB
    assert deliver(bootstrap, "large", value, **{"compression.type": "none"}) is None
    msg = read_one(bootstrap, "large", **{"fetch.max.bytes": 1024 * 1024,
                                          "max.partition.fetch.bytes": 64 * 1024,
                                          "receive.message.max.bytes": 16 << 20})
    assert msg.value() == value  # type: ignore[attr-defined]
