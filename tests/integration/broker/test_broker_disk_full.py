"""A real full disk: a ``ferry broker`` on a small tmpfs, an idempotent producer running on.

The disk fills while the producer sends; the broker answers KAFKA_STORAGE_ERROR (the
producer retries, the connection stays open), offset commits fail, reads go on. Once
space returns the producer's records go through, and every acknowledged record is stored
exactly once at its acknowledged offset, before and after a restart. Needs root to mount
the tmpfs; skipped otherwise (tests/unit/log/test_disk_full.py injects the same failures
at each write site without a mount).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.producer import ProduceRequest
from kafka_wire import WireClient

from core.log.records import encode_batch
from core.protocol.errors import ErrorCode

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0
TOPIC = "full"
FS_BYTES = 4 * 1024 * 1024
FILLER_CHUNK = 64 * 1024
_PT = ProduceRequest.TopicProduceData


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs",
                           str(mount_point)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory: Path) -> list[Path]:
    """Fill the file system with FILLER_CHUNK files until it is full; return them."""
    files = []
    for i in range(10_000):
        path = directory / f"filler-{i}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            break
        files.append(path)
        try:
            if os.write(fd, bytes(FILLER_CHUNK)) < FILLER_CHUNK:
                break
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            break
        finally:
            os.close(fd)
    return files


def _produce_raw(client: WireClient, value: bytes) -> int:
    batch = bytes(encode_batch([(b"raw", value, [], 1_700_000_000_000)]))
    request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        _PT(name=TOPIC, partition_data=[_PT.PartitionProduceData(index=0, records=batch)])])
    return client.call(request, 7).responses[0].partition_responses[0].error_code


def _stored(bootstrap: str) -> dict[int, bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    out: dict[int, bytes] = {}
    deadline = time.monotonic() + DEADLINE_S
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return out
            assert msg.offset() not in out, f"offset {msg.offset()} read twice"
            out[msg.offset()] = msg.value()
    finally:
        consumer.close()
    raise AssertionError("the consumer did not reach the log end")


def _commit(bootstrap: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "committer",
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_full_disk_loses_no_acknowledged_record(small_fs: Path, tmp_path: Path) -> None:
    broker = BrokerProcess(small_fs / "data", {
        "log.segment.bytes": "262144",  # rolls happen on the full disk too
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
    }, tmp_path / "broker.log")
    broker.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        admin.close()
        _commit(broker.bootstrap, 0)  # creates __consumer_offsets while there is room
        filler = _fill(small_fs)
        for path in filler[-8:]:  # leave ~512 KiB: the producer fills it
            path.unlink()

        acked: dict[int, bytes] = {}
        errors: list[str] = []
        total = 3000
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5, "batch.size": 32768,
                             "message.timeout.ms": 300000, "retry.backoff.ms": 100,
                             "retry.backoff.max.ms": 500})

        def delivered(err, msg) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                acked[msg.offset()] = msg.value()

        def run() -> None:
            for i in range(total):
                while True:
                    try:
                        producer.produce(TOPIC, b"%05d-" % i + b"x" * 500, partition=0,
                                         on_delivery=delivered)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            producer.flush(DEADLINE_S * 3)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        _wait(lambda: "offline for writes" in broker.output(), "the disk to fill")
        acked_while_full = len(acked)
        assert 0 < acked_while_full < total

        client = WireClient(broker.port)  # one connection, several failing requests
        try:
            for _ in range(3):
                assert _produce_raw(client, b"nope") == ErrorCode.KAFKA_STORAGE_ERROR
        finally:
            client.close()
        with pytest.raises(KafkaException):
            _commit(broker.bootstrap, 1)  # the offset commit cannot be stored either
        assert _stored(broker.bootstrap) == acked  # reads go on
        for path in filler:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # space returns

        thread.join(DEADLINE_S * 3)
        assert not thread.is_alive()
        assert not errors, errors[:3]
        assert len(acked) == total
        _commit(broker.bootstrap, 5)
        stored = _stored(broker.bootstrap)
        assert stored == acked, "an acknowledged record is missing, moved or duplicated"
        assert sorted(stored.values()) == sorted(b"%05d-" % i + b"x" * 500
                                                for i in range(total))
        assert broker.stop() == 0
        broker.start()
        assert _stored(broker.bootstrap) == acked
    finally:
        broker.stop()
