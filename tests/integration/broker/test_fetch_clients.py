"""Fetch and ListOffsets through real clients: long polls woken by appends, watermarks,
offsets by timestamp, and reads that start inside a compressed batch."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

pytestmark = pytest.mark.integration

DEADLINE_S = 20.0
BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def bootstrap(module_broker) -> Iterator[str]:
    admin = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, 1) for name in ("tail", "timed", "mid")])
    finally:
        admin.close()
    producer = Producer({"bootstrap.servers": module_broker.bootstrap,
                         "compression.type": "zstd", "linger.ms": 50})
    for i in range(10):
        producer.produce("timed", b"t%d" % i, partition=0, timestamp=BASE_TS + 1000 * i)
        producer.produce("mid", b"m%d" % i, partition=0)
    assert producer.flush(DEADLINE_S) == 0
    yield module_broker.bootstrap


def test_a_waiting_consumer_is_woken_by_an_append(bootstrap: str) -> None:
    # The broker may hold each fetch for up to 30 s, longer than the deadline below: only
    # the append listener can make the record arrive in time.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "fetch.wait.max.ms": 30000, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition("tail", 0, 0)])
    try:
        for _ in range(5):  # let the consumer connect and start its (empty) long poll
            assert consumer.poll(0.2) is None
        deadline = time.monotonic() + DEADLINE_S
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("tail", b"wake up", partition=0)
        assert producer.flush(DEADLINE_S) == 0
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None and msg.value() == b"wake up"
                return
        raise AssertionError("the waiting fetch was not answered after the append")
    finally:
        consumer.close()


def test_watermarks_and_offsets_by_timestamp(bootstrap: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("timed", 0),
                                              timeout=DEADLINE_S) == (0, 10)
        found = consumer.offsets_for_times([TopicPartition("timed", 0, BASE_TS + 3500)],
                                           timeout=DEADLINE_S)
        assert found[0].offset == 4
    finally:
        consumer.close()
    kp = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = KpTopicPartition("timed", 0)
        assert kp.beginning_offsets([tp]) == {tp: 0} and kp.end_offsets([tp]) == {tp: 10}
        stamped = kp.offsets_for_times({tp: BASE_TS + 9000})[tp]
        assert (stamped.offset, stamped.timestamp) == (9, BASE_TS + 9000)
        assert kp.offsets_for_times({tp: BASE_TS + 99_000})[tp] is None
    finally:
        kp.close()


def test_reading_from_inside_a_compressed_batch(bootstrap: str) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10_000)
    try:
        tp = KpTopicPartition("mid", 0)
        consumer.assign([tp])
        consumer.seek(tp, 7)  # inside the one zstd batch holding offsets 0-9
        got = [next(consumer) for _ in range(3)]
        assert [(m.offset, m.value) for m in got] == [(7, b"m7"), (8, b"m8"), (9, b"m9")]
    finally:
        consumer.close()
