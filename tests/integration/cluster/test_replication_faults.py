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
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from jepsen_checker import CheckResult, check

from core.backends.registry import open_backend
from core.backends.types import ProducerRecord
from core.backends.types import TopicPartition as BackendPartition
from core.group import partition_for
from core.log.config import TopicConfig
from core.log.log import PartitionLog
from core.log.records import decode_batch, iter_batches

pytestmark = pytest.mark.slow

TOPIC = "jepsen"
PARTITIONS = 3
SETTINGS = {"min.insync.replicas": "2", "default.replication.factor": "3",
            "offsets.topic.replication.factor": "3", "replica.lag.time.max.ms": "4000",
            "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
            "replica.fetch.wait.max.ms": "200", "offsets.topic.num.partitions": "3"}


@pytest.fixture
def cluster(tmp_path: Path):
    with running_cluster(tmp_path, broker=True, **SETTINGS) as nodes:
        yield nodes


def _bootstrap(nodes: list[ClusterNodeProcess]) -> str:
    return ",".join(f"127.0.0.1:{n.kafka_port}" for n in nodes)


def _view(nodes: list[ClusterNodeProcess]) -> dict | None:
    for node in nodes:
        if node.alive:
            view = node.describe()
            if view is not None:
                return view
    return None


def _ready(nodes: list[ClusterNodeProcess], brokers: int = 3) -> None:
    def live() -> bool:
        view = _view(nodes)
        return bool(view) and sum(not b["fenced"] for b in view["brokers"].values()) >= brokers
    wait_for(live, 40, f"{brokers} live brokers", nodes)


def _create_topic(nodes: list[ClusterNodeProcess]) -> None:
    admin = AdminClient({"bootstrap.servers": _bootstrap(nodes)})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=30)

    wait_for(lambda: _full_isrs(nodes), 30, "the topic with full ISRs", nodes)


def _full_isrs(nodes: list[ClusterNodeProcess]) -> bool:
    """Every partition of the topic has its three replicas in sync."""
    topic = (_view(nodes) or {}).get("topics", {}).get(TOPIC)
    return bool(topic) and all(len(p["isr"]) == 3 for p in topic["partitions"])


def _idempotent_workload(nodes: list[ClusterNodeProcess]) -> Workload:
    """The cluster ready, the topic created, and an acks=all idempotent producer on it."""
    _ready(nodes)
    _create_topic(nodes)
    return Workload(nodes, acks="all", **{"enable.idempotence": True})


def _down_while_writing(nodes: list[ClusterNodeProcess], node: ClusterNodeProcess,
                        workload: Workload, seconds: float, *, kill: bool = True) -> None:
    """SIGKILL (or SIGTERM) ``node``, write for ``seconds``, start it and wait until the
    cluster is live again."""
    if kill:
        node.kill()
    else:
        node.stop()
    workload.send(seconds)
    node.start()
    _ready(nodes)


def _nothing_lost(nodes: list[ClusterNodeProcess], workload: Workload) -> CheckResult:
    """The workload finished and checked: nothing acknowledged lost, nothing inconsistent."""
    workload.finish()
    result = _checked(nodes, workload)
    assert result.ok, result.summary()
    return result


def _replicas_converge(nodes: list[ClusterNodeProcess]) -> None:
    """The restarted brokers caught up (truncating what they alone had) and rejoined every
    ISR; then the three replicas of each partition hold the same records."""
    wait_for(lambda: _full_isrs(nodes), 30, "full ISRs again", nodes)
    _replicas_agree(nodes)


def _partition(nodes: list[ClusterNodeProcess], partition: int) -> dict:
    view = wait_for(lambda: _view(nodes), 20, "metadata", nodes)
    return view["topics"][TOPIC]["partitions"][partition]


def _node(nodes: list[ClusterNodeProcess], node_id: int) -> ClusterNodeProcess:
    return next(n for n in nodes if n.node_id == node_id)


class Workload:
    """One producer of increasing integers; delivery reports fill ``acknowledged``."""

    def __init__(self, nodes: list[ClusterNodeProcess], **config: object) -> None:
        self.acknowledged: dict[int, tuple[int, int]] = {}
        self.failed = 0
        self.sent = 0
        self.producer = Producer({"bootstrap.servers": _bootstrap(nodes), "linger.ms": 2,
                                  "message.timeout.ms": 20000, "request.timeout.ms": 5000,
                                  "topic.metadata.refresh.interval.ms": 500,
                                  "retry.backoff.ms": 50, **config})

    def _report(self, err: object, msg: object) -> None:
        if err is None:
            self.acknowledged[int(msg.value())] = (msg.partition(), msg.offset())
        else:
            self.failed += 1

    def send(self, seconds: float, partition: int | None = None, pace_s: float = 0.002
             ) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            extra = {} if partition is None else {"partition": partition}
            try:
                self.producer.produce(TOPIC, value=str(self.sent).encode(),
                                      on_delivery=self._report, **extra)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(pace_s)

    def finish(self, timeout_s: float = 40.0) -> None:
        left = self.producer.flush(timeout_s)
        assert left == 0, f"{left} messages still undelivered after {timeout_s} s"


def _read_back(nodes: list[ClusterNodeProcess]) -> dict[int, list[tuple[int, int]]]:
    """Every record of every partition, from the beginning to the high watermark."""
    consumer = Consumer({"bootstrap.servers": _bootstrap([n for n in nodes if n.alive]),
                         "group.id": "jepsen-reader", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 500})
    try:
        def ends_now() -> dict[int, int]:
            return {p: wait_for(lambda p=p: _high(consumer, p), 30, f"partition {p}'s end",
                                nodes)[1] for p in range(PARTITIONS)}

        # The cluster settles first: followers catch up and the high watermarks stop
        # moving (an acks=1 write may be acknowledged before it is committed).
        ends, deadline = ends_now(), time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(1.0)
            now = ends_now()
            if now == ends:
                break
            ends = now
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        read: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + 60
        while any((read[p][-1][0] + 1 if read[p] else 0) < ends[p] for p in read):
            assert time.monotonic() < deadline, f"read back only {read} of {ends}"
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            read[msg.partition()].append((msg.offset(), int(msg.value())))
        return read
    finally:
        consumer.close()


def _high(consumer: Consumer, partition: int) -> tuple[int, int] | None:
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=2)
    except Exception:  # no leader yet: ask again
        return None


def _checked(nodes: list[ClusterNodeProcess], workload: Workload) -> CheckResult:
    result = check(workload.acknowledged, _read_back(nodes))
    print(f"checker: {result.summary()}; {workload.sent} sent, {workload.failed} failed")
    return result


def test_acks_all_idempotent_loses_nothing_when_leaders_are_killed(cluster) -> None:
    nodes = cluster
    workload = _idempotent_workload(nodes)
    rng = random.Random(16)
    workload.send(2.0)
    for _ in range(2):  # kill -9 a partition leader mid-stream, then restart it
        victim = _node(nodes, _partition(nodes, rng.randrange(PARTITIONS))["leader"])
        _down_while_writing(nodes, victim, workload, 5.0)
        workload.send(2.0)
    result = _nothing_lost(nodes, workload)
    assert result.acknowledged > 500, result.summary()
    _replicas_converge(nodes)


def _replicas_agree(nodes: list[ClusterNodeProcess]) -> None:
    """Stop the nodes and compare each partition's records (offset, value, leader epoch)
    across the three replicas' log directories."""
    for node in nodes:
        node.stop()
    for p in range(PARTITIONS):
        logs = [_records(node.data_dir / f"{TOPIC}-{p}", p) for node in nodes]
        lengths = [len(records) for records in logs]
        first = next((i for i, r in enumerate(zip(*logs, strict=False)) if len(set(r)) > 1),
                     min(lengths))
        assert logs[0] == logs[1] == logs[2], (
            f"partition {p}: replicas differ (lengths {lengths}) from index {first}")


def _records(directory: Path, partition: int) -> list[tuple[int, int, int]]:
    plog = PartitionLog.open(directory, TOPIC, partition, TopicConfig())
    try:
        out, offset = [], plog.log_start_offset
        while offset < plog.log_end_offset:
            data = plog.read(offset, 1 << 20).data
            for position, header in iter_batches(data):
                _, records = decode_batch(data, position)
                out.extend((r.offset, int(r.value), header.partition_leader_epoch)
                           for r in records)
                offset = header.last_offset + 1
        return out
    finally:
        plog.close()


def _followers_paused_then_leader_killed(nodes: list[ClusterNodeProcess], acks: str
                                         ) -> tuple[Workload, int]:
    """Pause the followers of partition 0, write to it, SIGKILL its leader, resume the
    followers (within the session timeout: they stay in the ISR and one of them leads)."""
    _ready(nodes)
    _create_topic(nodes)
    workload = Workload(nodes, acks=acks, **{"message.timeout.ms": 6000})
    workload.send(1.0, partition=0)
    workload.producer.flush(10)
    spec = _partition(nodes, 0)
    followers = [_node(nodes, r) for r in spec["replicas"] if r != spec["leader"]]
    for follower in followers:
        follower.pause()
    # Longer than replica.fetch.wait.max.ms: the followers' long-polling fetches are
    # answered (empty) before the writes, so none of them carries the writes to a follower.
    time.sleep(0.6)
    before = len(workload.acknowledged)
    workload.send(1.0, partition=0)
    acknowledged_while_paused = len(workload.acknowledged) - before
    _node(nodes, spec["leader"]).kill()
    for follower in followers:
        follower.resume()
    workload.send(3.0, partition=0)
    workload.producer.flush(30)
    return workload, acknowledged_while_paused


def test_control_acks_1_loses_acknowledged_writes_and_the_checker_finds_them(cluster):
    workload, acknowledged_while_paused = _followers_paused_then_leader_killed(cluster, "1")
    result = _checked(cluster, workload)
    assert acknowledged_while_paused > 0
    assert result.lost, f"the checker found no loss: {result.summary()}"


def test_acks_all_acknowledges_nothing_only_the_killed_leader_had(cluster):
    workload, acknowledged_while_paused = _followers_paused_then_leader_killed(cluster, "all")
    result = _checked(cluster, workload)
    assert acknowledged_while_paused == 0
    assert not result.lost and not result.inconsistent, result.summary()
    # The old leader comes back with batches nobody else has: it truncates them by leader
    # epoch (Fetch's diverging epoch), catches up, and holds what the others hold.
    old_leader = next(n for n in cluster if not n.alive)
    old_records = _records(old_leader.data_dir / f"{TOPIC}-0", 0)
    new_leader = _node(cluster, _partition(cluster, 0)["leader"])
    checkpoint = (new_leader.data_dir / f"{TOPIC}-0" / "leader-epoch-checkpoint").read_text()
    new_epoch_start = int(checkpoint.split("\n")[-2].split()[1])
    old_leader.start()
    wait_for(lambda: _full_isrs(cluster), 40, "the old leader back in every ISR", cluster)
    if old_records and old_records[-1][0] >= new_epoch_start:
        # It had batches past the new leader's epoch start (on a loaded machine a
        # follower may still have fetched them all): those were cut by leader epoch.
        assert "log diverged" in old_leader.log_path.read_text(errors="replace")
    _replicas_agree(cluster)


def test_a_paused_leader_is_fenced_and_acknowledges_nothing_after_resuming(cluster):
    nodes = cluster
    workload = _idempotent_workload(nodes)
    workload.send(1.0)
    old = _partition(nodes, 0)
    leader = _node(nodes, old["leader"])
    leader.pause()
    workload.send(5.0)  # longer than broker.session.timeout.ms: the controller fences it
    others = [n for n in nodes if n is not leader]
    wait_for(lambda: _partition(others, 0)["leader_epoch"] > old["leader_epoch"], 20,
             "a new leader of partition 0", nodes)
    leader.resume()
    workload.send(3.0)
    _nothing_lost(nodes, workload)


def test_a_consumer_group_keeps_its_offsets_when_its_coordinator_is_killed(cluster):
    nodes = cluster
    workload = _idempotent_workload(nodes)
    workload.send(2.0)
    workload.finish()
    total = len(workload.acknowledged)
    group = "jepsen-group"
    consumer = Consumer({"bootstrap.servers": _bootstrap(nodes), "group.id": group,
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
                view = wait_for(lambda: _view(nodes), 20, "metadata", nodes)
                offsets = view["topics"]["__consumer_offsets"]["partitions"]
                coordinator = offsets[partition_for(group, len(offsets))]["leader"]
                _node(nodes, coordinator).kill()
                killed = True
    finally:
        consumer.close()
    backwards = {p: c for p, c in committed.items() if c != sorted(c)}
    assert killed and not backwards, f"committed offsets went backwards: {backwards}"
    assert seen == set(workload.acknowledged)
    # A new member of the group starts where the last commits left off.
    reader = Consumer({"bootstrap.servers": _bootstrap([n for n in nodes if n.alive]),
                       "group.id": group, "enable.auto.commit": False})
    try:
        positions = wait_for(lambda: _committed(reader), 30, "the committed offsets", nodes)
    finally:
        reader.close()
    ends = {p: max(o for v, (q, o) in workload.acknowledged.items() if q == p) + 1
            for p in range(PARTITIONS)}
    assert positions == ends


def _committed(consumer: Consumer) -> dict[int, int] | None:
    try:
        found = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                   timeout=5)
    except Exception:  # the coordinator is still moving
        return None
    return {tp.partition: tp.offset for tp in found}


def test_acks_all_survives_controller_and_follower_kills_and_a_rolling_restart(cluster):
    nodes = cluster
    workload = _idempotent_workload(nodes)
    workload.send(1.5)
    controller = _node(nodes, wait_for(lambda: (_view(nodes) or {}).get("controller_id"),
                                       20, "a controller", nodes))
    _down_while_writing(nodes, controller, workload, 4.0)  # also a partition leader
    spec = _partition(nodes, 1)
    follower = _node(nodes, next(r for r in spec["replicas"] if r != spec["leader"]))
    _down_while_writing(nodes, follower, workload, 2.0)
    for node in nodes:  # rolling restart: SIGTERM, start, wait for it to be live again
        _down_while_writing(nodes, node, workload, 1.0, kill=False)
    workload.send(1.0)
    _nothing_lost(nodes, workload)
    _replicas_converge(nodes)


def test_the_kafka_backend_follows_the_leader_across_a_failover(cluster) -> None:
    nodes = cluster
    _ready(nodes)
    _create_topic(nodes)
    backend = open_backend("kafka://" + _bootstrap(nodes))
    try:
        written: dict[int, int] = {}
        victim = _node(nodes, _partition(nodes, 0)["leader"])
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
    assert _partition(nodes, 0)["leader"] != victim.node_id
    assert read == written
