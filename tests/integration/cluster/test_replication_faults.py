"""Three ``ferry broker`` cluster nodes as processes on loopback, a workload of unique values
produced by confluent-kafka, every acknowledged value recorded with its (partition,
offset), faults injected, everything read back, and the checker of tests/jepsen_checker.py
run on it (lost acknowledged writes, two values at one offset, duplicates, out of order).

* acks=all with idempotence, RF=3, min.insync.replicas=2, the partition leaders SIGKILLed
  (and restarted) mid-stream: nothing acknowledged is lost.
* The control: acks=1 while the followers of a partition are paused, then its leader is
  SIGKILLed: the checker finds the acknowledged writes that only the dead leader had. The
  same schedule with acks=all acknowledges none of them, and loses nothing; the old
  leader, restarted, truncates the batches only it had and ends equal to the others.
* A leader SIGSTOPped for longer than the session timeout is fenced, a new leader takes
  over, and the resumed old leader acknowledges nothing more.
* SIGKILL of the active controller and of a follower, then a rolling restart, under
  acks=all: nothing lost, and the replicas end equal.
* The ``kafka://`` backend (acks=all) keeps producing to a partition whose leader is
  SIGKILLed, and reads every record back where it was acknowledged.
* A consumer group whose coordinator (the leader of its ``__consumer_offsets`` partition)
  is SIGKILLed moves to the new leader: its committed offsets never go backwards and a
  new member starts where they left off.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from cluster_process import ClusterNodeProcess, running_cluster, wait_for
from confluent_kafka import Consumer
from jepsen_workload import (
    PARTITIONS,
    SETTINGS,
    TOPIC,
    Workload,
    bootstrap,
    checked,
    cluster_view,
    committed_offsets,
    create_topic,
    down_while_writing,
    full_isrs,
    idempotent_workload,
    node_of,
    nothing_lost,
    partition_spec,
    ready,
    replica_records,
    replicas_agree,
    replicas_converge,
)

from core.backends.registry import open_backend
from core.backends.types import ProducerRecord
from core.backends.types import TopicPartition as BackendPartition
from core.group import partition_for

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path):
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        yield nodes


def test_acks_all_idempotent_loses_nothing_when_leaders_are_killed(cluster) -> None:
    nodes = cluster
    workload = idempotent_workload(nodes)
    rng = random.Random(16)
    workload.send(2.0)
    for _ in range(2):  # kill -9 a partition leader mid-stream, then restart it
        victim = node_of(nodes, partition_spec(nodes, rng.randrange(PARTITIONS))["leader"])
        down_while_writing(nodes, victim, workload, 5.0)
        workload.send(2.0)
    result = nothing_lost(nodes, workload)
    assert result.acknowledged > 500, result.summary()
    replicas_converge(nodes)


def _followers_paused_then_leader_killed(nodes: list[ClusterNodeProcess], acks: str
                                         ) -> tuple[Workload, int]:
    """Pause the followers of partition 0, write to it, SIGKILL its leader, resume the
    followers (within the session timeout: they stay in the ISR and one of them leads)."""
    ready(nodes)
    create_topic(nodes)
    workload = Workload(nodes, acks=acks, **{"message.timeout.ms": 6000})
    workload.send(1.0, partition=0)
    workload.producer.flush(10)
    spec = partition_spec(nodes, 0)
    followers = [node_of(nodes, r) for r in spec["replicas"] if r != spec["leader"]]
    for follower in followers:
        follower.pause()
    # Longer than replica.fetch.wait.max.ms: the followers' long-polling fetches are
    # answered (empty) before the writes, so none of them carries the writes to a follower.
    time.sleep(0.6)
    before = len(workload.acknowledged)
    workload.send(1.0, partition=0)
    acknowledged_while_paused = len(workload.acknowledged) - before
    node_of(nodes, spec["leader"]).kill()
    for follower in followers:
        follower.resume()
    workload.send(3.0, partition=0)
    workload.producer.flush(30)
    return workload, acknowledged_while_paused


def test_control_acks_1_loses_acknowledged_writes_and_the_checker_finds_them(cluster):
    workload, acknowledged_while_paused = _followers_paused_then_leader_killed(cluster, "1")
    result = checked(cluster, workload)
    assert acknowledged_while_paused > 0
    assert result.lost, f"the checker found no loss: {result.summary()}"


def test_acks_all_acknowledges_nothing_only_the_killed_leader_had(cluster):
    workload, acknowledged_while_paused = _followers_paused_then_leader_killed(cluster, "all")
    result = checked(cluster, workload)
    assert acknowledged_while_paused == 0
    assert not result.lost and not result.inconsistent, result.summary()
    # The old leader comes back with batches nobody else has: it truncates them by leader
    # epoch (Fetch's diverging epoch), catches up, and holds what the others hold.
    old_leader = next(n for n in cluster if not n.alive)
    old_records = replica_records(old_leader.data_dir / f"{TOPIC}-0", 0)
    new_leader = node_of(cluster, partition_spec(cluster, 0)["leader"])
    checkpoint = (new_leader.data_dir / f"{TOPIC}-0" / "leader-epoch-checkpoint").read_text()
    new_epoch_start = int(checkpoint.split("\n")[-2].split()[1])
    old_leader.start()
    wait_for(lambda: full_isrs(cluster), 40, "the old leader back in every ISR", cluster)
    if old_records and old_records[-1][0] >= new_epoch_start:
        # It had batches past the new leader's epoch start (on a loaded machine a
        # follower may still have fetched them all): those were cut by leader epoch.
        assert "log diverged" in old_leader.log_path.read_text(errors="replace")
    replicas_agree(cluster)


def test_a_paused_leader_is_fenced_and_acknowledges_nothing_after_resuming(cluster):
    nodes = cluster
    workload = idempotent_workload(nodes)
    workload.send(1.0)
    old = partition_spec(nodes, 0)
    leader = node_of(nodes, old["leader"])
    leader.pause()
    workload.send(5.0)  # longer than broker.session.timeout.ms: the controller fences it
    others = [n for n in nodes if n is not leader]
    wait_for(lambda: partition_spec(others, 0)["leader_epoch"] > old["leader_epoch"], 20,
             "a new leader of partition 0", nodes)
    leader.resume()
    workload.send(3.0)
    nothing_lost(nodes, workload)


def test_a_consumer_group_keeps_its_offsets_when_its_coordinator_is_killed(cluster):
    nodes = cluster
    workload = idempotent_workload(nodes)
    workload.send(2.0)
    workload.finish()
    total = len(workload.acknowledged)
    group = "jepsen-group"
    consumer = Consumer({"bootstrap.servers": bootstrap(nodes), "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                         "topic.metadata.refresh.interval.ms": 500})
    seen: set[int] = set()
    committed: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    killed = False
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 90
        while len(seen) < total:
            assert time.monotonic() < deadline, f"consumed {len(seen)} of {total}"
            messages = consumer.consume(200, 0.5)
            good = [m for m in messages if not m.error()]
            if not good:
                continue
            seen.update(int(m.value()) for m in good)
            try:
                for tp in consumer.commit(asynchronous=False) or []:
                    if tp.error is None and tp.offset >= 0:
                        committed[tp.partition].append(tp.offset)
            except Exception:  # the coordinator is moving: the next commit carries it
                pass
            if not killed and len(seen) > total // 3:
                view = wait_for(lambda: cluster_view(nodes), 20, "metadata", nodes)
                offsets = view["topics"]["__consumer_offsets"]["partitions"]
                coordinator = offsets[partition_for(group, len(offsets))]["leader"]
                node_of(nodes, coordinator).kill()
                killed = True
    finally:
        consumer.close()
    backwards = {p: c for p, c in committed.items() if c != sorted(c)}
    assert killed and not backwards, f"committed offsets went backwards: {backwards}"
    assert seen == set(workload.acknowledged)
    # A new member of the group starts where the last commits left off.
    reader = Consumer({"bootstrap.servers": bootstrap([n for n in nodes if n.alive]),
                       "group.id": group, "enable.auto.commit": False})
    try:
        positions = wait_for(lambda: committed_offsets(reader), 30, "the committed offsets", nodes)
    finally:
        reader.close()
    ends = {p: max(o for v, (q, o) in workload.acknowledged.items() if q == p) + 1
            for p in range(PARTITIONS)}
    assert positions == ends


def test_acks_all_survives_controller_and_follower_kills_and_a_rolling_restart(cluster):
    nodes = cluster
    workload = idempotent_workload(nodes)
    workload.send(1.5)
    controller = node_of(nodes, wait_for(lambda: (cluster_view(nodes) or {}).get("controller_id"),
                                       20, "a controller", nodes))
    down_while_writing(nodes, controller, workload, 4.0)  # also a partition leader
    spec = partition_spec(nodes, 1)
    follower = node_of(nodes, next(r for r in spec["replicas"] if r != spec["leader"]))
    down_while_writing(nodes, follower, workload, 2.0)
    for node in nodes:  # rolling restart: SIGTERM, start, wait for it to be live again
        down_while_writing(nodes, node, workload, 1.0, kill=False)
    workload.send(1.0)
    nothing_lost(nodes, workload)
    replicas_converge(nodes)


def test_the_kafka_backend_follows_the_leader_across_a_failover(cluster) -> None:
    nodes = cluster
    ready(nodes)
    create_topic(nodes)
    backend = open_backend("kafka://" + bootstrap(nodes))
    try:
        written: dict[int, int] = {}
        victim = node_of(nodes, partition_spec(nodes, 0)["leader"])
        deadline = time.monotonic() + 60
        for i in range(400):
            assert time.monotonic() < deadline, f"wrote only {i} records"
            if i == 150:
                victim.kill()
            (landed,) = backend.produce(TOPIC, [ProducerRecord(value=str(i).encode(),
                                                               partition=0)])
            written[i] = landed.offset
        position, read = 0, {}
        while position < max(written.values()) + 1:
            assert time.monotonic() < deadline, f"read only up to {position}"
            result = backend.fetch({BackendPartition(TOPIC, 0): position}, max_wait_ms=500)[
                BackendPartition(TOPIC, 0)]
            for record in result.records:
                read[int(record.value)] = record.offset
            position = result.next_offset
    finally:
        backend.close()
    assert partition_spec(nodes, 0)["leader"] != victim.node_id
    assert read == written
