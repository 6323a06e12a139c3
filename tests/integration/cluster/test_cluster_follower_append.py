"""Followers store their leader's batches byte for byte, with three ``ferry broker``
processes: on a ``message.timestamp.type=LogAppendTime`` topic every replica's segment
holds the leader's bytes (offsets, timestamps, leader epochs, CRCs), and after the
leader's SIGKILL consumers read from the new leader the values, offsets and timestamps
they read before.

One follower is SIGSTOPped while the records are produced, so that it appends them about
a second after the leader stamped them: a follower that stamped its own clock would show
it in its bytes, and in what consumers read if it becomes the leader.
"""

from __future__ import annotations

import time
from pathlib import Path

from cluster_process import all_unfenced, running_cluster, wait_for
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

SETTINGS = {"offsets.topic.num.partitions": "1", "replica.fetch.wait.max.ms": "200",
            "replica.lag.time.max.ms": "10000"}
TOPIC = "stamped"
_PAUSE_S = 1.0


def _leader(admin: AdminClient, replicas: int) -> int | None:
    """The partition's leader once it has ``replicas`` in sync, else None."""
    found = admin.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
    if not found or found.error is not None or not found.partitions:
        return None
    partition = found.partitions[0]
    return partition.leader if partition.leader >= 0 and len(partition.isrs) == replicas \
        else None


def _read(bootstrap: str, expected: int) -> list[tuple[int, bytes, tuple[int, int]]]:
    """(offset, value, timestamp) of every record, from the beginning."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "readers",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    seen: list[tuple[int, bytes, tuple[int, int]]] = []
    try:
        wait_for(lambda: seen.extend((m.offset(), m.value(), m.timestamp())
                                     for m in consumer.consume(50, 0.5)
                                     if m.error() is None) or len(seen) >= expected,
                 30, f"{expected} records")
    finally:
        consumer.close()
    return seen


def _segment(node) -> bytes:
    path = node.data_dir / f"{TOPIC}-0" / "00000000000000000000.log"
    return path.read_bytes() if path.exists() else b""


def test_failover_keeps_log_append_times_and_replicas_hold_the_leaders_bytes(
        tmp_path: Path) -> None:
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        wait_for(lambda: all_unfenced(nodes), 40, "three live brokers", nodes)
        bootstrap = ",".join(f"127.0.0.1:{n.kafka_port}" for n in nodes)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3, config={
            "message.timestamp.type": "LogAppendTime"})])[TOPIC].result(timeout=40)
        leader_id = wait_for(lambda: _leader(admin, 3), 30, "a leader with 3 in sync", nodes)
        leader = next(n for n in nodes if n.node_id == leader_id)
        followers = [n for n in nodes if n is not leader]

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                             "linger.ms": 0, "message.timeout.ms": 20000})
        errors: list[str] = []
        paused_at = time.monotonic()
        followers[0].pause()
        try:
            for i in range(60):  # several batches, stamped at different milliseconds
                producer.produce(TOPIC, f"value-{i}".encode(), partition=0, timestamp=1000,
                                 on_delivery=lambda err, _m: errors.append(str(err))
                                 if err else None)
                if i % 10 == 9:
                    producer.poll(0.05)
            time.sleep(max(0.0, _PAUSE_S - (time.monotonic() - paused_at)))
        finally:
            followers[0].resume()
        assert producer.flush(30) == 0
        assert errors == []

        before = _read(f"127.0.0.1:{leader.kafka_port}", 60)
        assert [(offset, value) for offset, value, _ in before] == [
            (i, f"value-{i}".encode()) for i in range(60)]
        assert {kind for _, _, (kind, _) in before} == {TIMESTAMP_LOG_APPEND_TIME}
        assert all(ts > 1000 for _, _, (_, ts) in before)  # the leader's, not the producer's

        # Every replica holds the leader's bytes: offsets, timestamps, epochs, CRCs.
        expected = _segment(leader)
        wait_for(lambda: all(_segment(f) == expected for f in followers), 20,
                 "the followers' segments to equal the leader's", nodes)

        leader.kill()
        survivors = ",".join(f"127.0.0.1:{n.kafka_port}" for n in followers)
        survivor_admin = AdminClient({"bootstrap.servers": survivors})
        new_leader = wait_for(lambda: _leader(survivor_admin, 2), 30, "a new leader", nodes)
        assert new_leader != leader_id
        after = _read(survivors, 60)
        assert after == before
