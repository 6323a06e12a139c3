"""The Jepsen-style workload of the cluster fault tests: three ``ferry broker`` nodes'
readiness and views, one idempotent producer of increasing integers whose delivery reports
record every acknowledged value with its (partition, offset), the read-back of every
partition up to its settled high watermark, and the checker of tests/jepsen_checker.py run
on both. Shared by tests/integration/cluster/test_replication_faults.py and
test_partition_and_restart.py."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_process import ClusterNodeProcess, wait_for
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from jepsen_checker import CheckResult, check

from core.log.config import TopicConfig
from core.log.log import PartitionLog
from core.log.records import decode_batch, iter_batches

TOPIC = "jepsen"
PARTITIONS = 3
SETTINGS = {"min.insync.replicas": "2", "default.replication.factor": "3",
            "offsets.topic.replication.factor": "3", "replica.lag.time.max.ms": "4000",
            "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
            "replica.fetch.wait.max.ms": "200", "offsets.topic.num.partitions": "3"}



def bootstrap(nodes: list[ClusterNodeProcess]) -> str:
    return ",".join(f"127.0.0.1:{n.kafka_port}" for n in nodes)


def cluster_view(nodes: list[ClusterNodeProcess]) -> dict | None:
    for node in nodes:
        if node.alive:
            view = node.describe()
            if view is not None:
                return view
    return None


def ready(nodes: list[ClusterNodeProcess], brokers: int = 3) -> None:
    def live() -> bool:
        view = cluster_view(nodes)
        return bool(view) and sum(not b["fenced"] for b in view["brokers"].values()) >= brokers
    wait_for(live, 40, f"{brokers} live brokers", nodes)


def create_topic(nodes: list[ClusterNodeProcess]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(nodes)})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=30)

    wait_for(lambda: full_isrs(nodes), 30, "the topic with full ISRs", nodes)


def full_isrs(nodes: list[ClusterNodeProcess]) -> bool:
    """Every partition of the topic has its three replicas in sync."""
    topic = (cluster_view(nodes) or {}).get("topics", {}).get(TOPIC)
    return bool(topic) and all(len(p["isr"]) == 3 for p in topic["partitions"])


def idempotent_workload(nodes: list[ClusterNodeProcess]) -> Workload:
    """The cluster ready, the topic created, and an acks=all idempotent producer on it."""
    ready(nodes)
    create_topic(nodes)
    return Workload(nodes, acks="all", **{"enable.idempotence": True})


def down_while_writing(nodes: list[ClusterNodeProcess], node: ClusterNodeProcess,
                        workload: Workload, seconds: float, *, kill: bool = True) -> None:
    """SIGKILL (or SIGTERM) ``node``, write for ``seconds``, start it and wait until the
    cluster is live again."""
    if kill:
        node.kill()
    else:
        node.stop()
    workload.send(seconds)
    node.start()
    ready(nodes)


def nothing_lost(nodes: list[ClusterNodeProcess], workload: Workload) -> CheckResult:
    """The workload finished and checked: nothing acknowledged lost, nothing inconsistent."""
    workload.finish()
    result = checked(nodes, workload)
    assert result.ok, result.summary()
    return result


def replicas_converge(nodes: list[ClusterNodeProcess]) -> None:
    """The restarted brokers caught up (truncating what they alone had) and rejoined every
    ISR; then the three replicas of each partition hold the same records."""
    wait_for(lambda: full_isrs(nodes), 30, "full ISRs again", nodes)
    replicas_agree(nodes)


def partition_spec(nodes: list[ClusterNodeProcess], partition: int) -> dict:
    view = wait_for(lambda: cluster_view(nodes), 20, "metadata", nodes)
    return view["topics"][TOPIC]["partitions"][partition]


def node_of(nodes: list[ClusterNodeProcess], node_id: int) -> ClusterNodeProcess:
    return next(n for n in nodes if n.node_id == node_id)


class Workload:
    """One producer of increasing integers; delivery reports fill ``acknowledged`` (and
    ``acknowledged_at``: the ``time.monotonic()`` when ``send`` polled the report)."""

    def __init__(self, nodes: list[ClusterNodeProcess], **config: object) -> None:
        self.acknowledged: dict[int, tuple[int, int]] = {}
        self.acknowledged_at: dict[int, float] = {}
        self.failed = 0
        self.sent = 0
        self.producer = Producer({"bootstrap.servers": bootstrap(nodes), "linger.ms": 2,
                                  "message.timeout.ms": 20000, "request.timeout.ms": 5000,
                                  "topic.metadata.refresh.interval.ms": 500,
                                  "retry.backoff.ms": 50, **config})

    def _report(self, err: object, msg: object) -> None:
        if err is None:
            self.acknowledged[int(msg.value())] = (msg.partition(), msg.offset())
            self.acknowledged_at[int(msg.value())] = time.monotonic()
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


def read_back(nodes: list[ClusterNodeProcess]) -> dict[int, list[tuple[int, int]]]:
    """Every record of every partition, from the beginning to the high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap([n for n in nodes if n.alive]),
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


def checked(nodes: list[ClusterNodeProcess], workload: Workload) -> CheckResult:
    result = check(workload.acknowledged, read_back(nodes))
    print(f"checker: {result.summary()}; {workload.sent} sent, {workload.failed} failed")
    return result


def replicas_agree(nodes: list[ClusterNodeProcess]) -> None:
    """Stop the nodes and compare each partition's records (offset, value, leader epoch)
    across the three replicas' log directories."""
    for node in nodes:
        node.stop()
    for p in range(PARTITIONS):
        logs = [replica_records(node.data_dir / f"{TOPIC}-{p}", p) for node in nodes]
        lengths = [len(records) for records in logs]
        first = next((i for i, r in enumerate(zip(*logs, strict=False)) if len(set(r)) > 1),
                     min(lengths))
        assert logs[0] == logs[1] == logs[2], (
            f"partition {p}: replicas differ (lengths {lengths}) from index {first}")


def replica_records(directory: Path, partition: int) -> list[tuple[int, int, int]]:
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


def committed_offsets(consumer: Consumer) -> dict[int, int] | None:
    try:
        found = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                   timeout=5)
    except Exception:  # the coordinator is still moving
        return None
    return {tp.partition: tp.offset for tp in found}
