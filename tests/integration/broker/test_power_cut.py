"""A power cut on one node: what each acks and ferry.acks.all.fsync setting keeps.

The broker runs under tests/power_cut.py, which records every fsync; after a SIGKILL the
test cuts each segment file back to its last fsynced size (what a machine losing power
keeps) and starts the broker again. An idempotent confluent-kafka producer runs across the
cut.

* acks=all with ``ferry.acks.all.fsync=true`` (the default): every acknowledged record is
  there exactly once at its acknowledged offset, the producer goes on without a fatal
  error, and no offset is given twice.
* ``ferry.acks.all.fsync=false`` (Kafka's behaviour) or acks=1: the acknowledged records
  not yet written back are lost, which shows that the simulated cut really drops data.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from power_cut import drop_unsynced, launcher

pytestmark = pytest.mark.integration

DEADLINE_S = 30.0
TOPIC = "cut"
PARTITIONS = 2


def _create_topic(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        admin.close()


def _stored(bootstrap: str) -> dict[tuple[int, int], bytes]:
    """(partition, offset) -> value of everything in the topic, read to the end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: dict[tuple[int, int], bytes] = {}
    at_end: set[int] = set()
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            key = (msg.partition(), msg.offset())
            assert key not in out, f"offset {key} read twice"
            out[key] = msg.value()
    finally:
        consumer.close()
    assert len(at_end) == PARTITIONS, "the consumer did not reach the log end"
    return out


class _ProducerRun:
    """An idempotent producer sending numbered records from a thread until stopped."""

    def __init__(self, bootstrap: str, acks: str) -> None:
        self.acked: dict[tuple[int, int], bytes] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._config = {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 2,
                        "enable.idempotence": acks == "all", "message.timeout.ms": 60000,
                        "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                        "error_cb": lambda err: self.errors.append(str(err))
                        if err.fatal() else None}
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err: KafkaError | None, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[(msg.partition(), msg.offset())] = msg.value()

    def _run(self) -> None:
        producer = Producer(self._config)
        i = 0
        while not self._stop.is_set() and i < 200_000:
            try:
                producer.produce(TOPIC, b"record-%06d" % i, partition=i % PARTITIONS,
                                 on_delivery=self._delivered)
                i += 1
                if i % 50 == 0:
                    producer.poll(0.005)  # a steady trickle, not one huge burst
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.flush(DEADLINE_S * 2)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + DEADLINE_S * 2
        while len(self.acked) < count and time.monotonic() < deadline and not self.errors:
            time.sleep(0.01)
        assert not self.errors, self.errors[:3]
        assert len(self.acked) >= count, f"only {len(self.acked)} records acknowledged"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(DEADLINE_S * 3)
        assert not self._thread.is_alive()


def _broker(tmp_path: Path, config: dict[str, str]) -> tuple[BrokerProcess, Path]:
    journal = tmp_path / "fsync.journal"
    broker = BrokerProcess(tmp_path / "data", config, tmp_path / "broker.log",
                           launcher=launcher(journal))
    broker.start()
    return broker, journal


def _power_cut(broker: BrokerProcess, journal: Path) -> dict[str, int]:
    broker.kill()
    assert broker.proc is not None and broker.proc.returncode == -signal.SIGKILL
    return drop_unsynced(broker.data_dir, journal)


def test_acks_all_with_fsync_survives_a_power_cut(tmp_path: Path) -> None:
    broker, journal = _broker(tmp_path, {})  # ferry.acks.all.fsync defaults to true
    try:
        _create_topic(broker.bootstrap)
        run = _ProducerRun(broker.bootstrap, "all")
        try:
            run.wait_for(400)
            _power_cut(broker, journal)
            acked_before_cut = dict(run.acked)
            broker.start()
            run.wait_for(len(acked_before_cut) + 400)
        finally:
            run.stop()
        assert not run.errors, run.errors[:3]  # no fatal OUT_OF_ORDER_SEQUENCE_NUMBER
        stored = _stored(broker.bootstrap)
        lost = {k: v for k, v in run.acked.items() if stored.get(k) != v}
        assert not lost, f"{len(lost)} acknowledged records lost or moved, e.g. " \
                         f"{sorted(lost.items())[:3]}"
        values = list(stored.values())
        assert len(values) == len(set(values)), "a record is stored twice"
        # Offsets were not given twice: what was acknowledged after the restart sits
        # above everything acknowledged before the cut, partition by partition.
        for p in range(PARTITIONS):
            before = max((o for (q, o) in acked_before_cut if q == p), default=-1)
            after = [o for (q, o) in run.acked if q == p and (q, o) not in acked_before_cut]
            assert after and min(after) > before
    finally:
        broker.stop()


@pytest.mark.parametrize(("acks", "config"), [
    ("all", {"ferry.acks.all.fsync": "false"}),
    ("1", {}),
])
def test_without_fsync_a_power_cut_loses_acknowledged_records(tmp_path: Path, acks: str,
                                                              config: dict[str, str]) -> None:
    broker, journal = _broker(tmp_path, config)
    try:
        _create_topic(broker.bootstrap)
        run = _ProducerRun(broker.bootstrap, acks)
        try:
            run.wait_for(300)
        finally:
            run.stop()
        dropped = _power_cut(broker, journal)
        broker.start()
        stored = _stored(broker.bootstrap)
        lost = [k for k, v in run.acked.items() if stored.get(k) != v]
        # Nothing was fsynced (Kafka's default flush policy leaves it to the OS), so the cut
        # takes every acknowledged record with it.
        assert dropped and len(lost) == len(run.acked)
    finally:
        broker.stop()
