"""A follower's fetcher against its leaders, with three ``ferry broker`` processes.

Followers long-poll their leaders (``replica.fetch.wait.max.ms``, here 20 s so that a
missed wake-up cannot hide behind a short poll). A fetch in flight names only the
partitions the follower knew of when it sent it; a topic created meanwhile must still be
replicated at once, or every acks=all produce to it waits out the poll. Here the producer
gives up after 8 s, well inside the poll, so the test fails if either side waits for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_process import all_unfenced, running_cluster, wait_for
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

SETTINGS = {"offsets.topic.num.partitions": "3", "replica.fetch.wait.max.ms": "20000",
            "replica.lag.time.max.ms": "30000"}
_GIVE_UP_MS = 8000


@pytest.fixture
def cluster(tmp_path: Path):
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        yield nodes


def _fully_replicated(admin: AdminClient, topic: str) -> bool:
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    return bool(found and found.error is None and found.partitions) and all(
        p.leader >= 0 and len(p.isrs) == 3 for p in found.partitions.values())


def _produce_acks_all(bootstrap: str, topic: str, values: list[bytes]) -> list[str]:
    """Produce one value per partition with acks=all; the delivery errors."""
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": _GIVE_UP_MS})
    for partition, value in enumerate(values):
        producer.produce(topic, value, partition=partition,
                         on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
    assert producer.flush(_GIVE_UP_MS / 1000 + 10) == 0
    return errors


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    """Every record below the high watermark (consumers read nothing above it)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    try:
        wait_for(lambda: values.extend(m.value() for m in consumer.consume(10, 0.5)
                                       if m.error() is None) or len(values) >= expected,
                 30, f"{expected} records of {topic}")
    finally:
        consumer.close()
    return values


def test_acks_all_to_a_new_topic_does_not_wait_for_the_followers_long_polls(cluster) -> None:
    nodes = cluster
    wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
    bootstrap = ",".join(f"127.0.0.1:{n.kafka_port}" for n in nodes)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # The fetchers are parked on __consumer_offsets when each topic appears.
    wait_for(lambda: _fully_replicated(admin, "__consumer_offsets"), 40, "offsets topic",
             nodes)
    for topic in ("fresh-1", "fresh-2"):
        admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(timeout=30)
        wait_for(lambda topic=topic: _fully_replicated(admin, topic), 30, topic, nodes)
        values = [f"{topic}-{p}".encode() for p in range(3)]
        assert _produce_acks_all(bootstrap, topic, values) == []
        assert sorted(_read_all(bootstrap, topic, 3, 3)) == sorted(values)
