"""Cheap attacks on a ``ferry broker`` subprocess, each while a well-behaved client works.

Slow-loris frames (a size prefix of 100 MiB and four bytes), requests naming 100,000
partitions, CreateTopics beyond what the broker can open, and floods of idle connections
under a low open-file limit: the broker's memory and log stay small, the offender gets an
answer or a closed connection, and the other client's round trips keep completing. The
deadlines here are generous liveness bounds; the latencies measured are reported by
``bench/bench_broker_limits.py``, never asserted.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import ProduceRequest
from kafka_wire import WireClient

from core.log.records import encode_batch

pytestmark = pytest.mark.integration

MiB = 1 << 20
DEADLINE_S = 30.0  # liveness: far above any latency a working broker shows


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator:
    started: list[BrokerProcess] = []

    def start(config: dict[str, str] | None = None, *, open_files: int | None = None,
              data_dir: Path | None = None) -> BrokerProcess:
        broker = BrokerProcess(data_dir or tmp_path / "data",
                               {"group.initial.rebalance.delay.ms": "0",
                                "offsets.topic.num.partitions": "1", **(config or {})},
                               tmp_path / "broker.log", open_files=open_files)
        started.append(broker)
        broker.start()
        return broker

    yield start
    for broker in started:
        broker.stop()


class RoundTrips:
    """A confluent-kafka producer and consumer: each ``once()`` produces one record and
    waits until the consumer reads it back."""

    def __init__(self, bootstrap: str, topic: str = "t") -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(DEADLINE_S)
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "round-trips",
                                  "enable.auto.commit": False})
        self.consumer.assign([CkTopicPartition(topic, 0, OFFSET_BEGINNING)])
        self.latencies: list[float] = []

    def once(self) -> float:
        value = f"v{len(self.latencies)}".encode()
        start = time.monotonic()
        self.producer.produce(self.topic, value)
        assert self.producer.flush(DEADLINE_S) == 0, "produce not acknowledged"
        while time.monotonic() - start < DEADLINE_S:
            message = self.consumer.poll(0.2)
            if message is not None and not message.error() and message.value() == value:
                self.latencies.append(time.monotonic() - start)
                return self.latencies[-1]
        raise AssertionError(f"record {value!r} not read back within {DEADLINE_S} s")

    def close(self) -> None:
        self.consumer.close()


def closed_by_broker(sock: socket.socket, wait_s: float = 2.0) -> bool:
    """True if the broker closed ``sock`` (EOF or reset) within ``wait_s``."""
    sock.settimeout(wait_s)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def closed_now(socks: list[socket.socket]) -> list[bool]:
    """Which of ``socks`` the broker has closed (EOF or reset) by now, after a moment."""
    time.sleep(1.0)
    states = []
    for sock in socks:
        sock.setblocking(False)
        try:
            states.append(sock.recv(1) == b"")
        except BlockingIOError:
            states.append(False)
        except OSError:
            states.append(True)
        sock.settimeout(DEADLINE_S)
    return states


def loris(port: int, announced: int, body: bytes = b"\0\0\0\1") -> socket.socket:
    """A connection that announces a frame of ``announced`` bytes and sends only ``body``."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    sock.sendall(struct.pack(">i", announced) + body)
    return sock


def test_slow_loris_frames_cost_neither_memory_nor_other_clients(start_broker) -> None:
    broker = start_broker()
    trips = RoundTrips(broker.bootstrap)
    lorises: list[socket.socket] = []
    try:
        trips.once()
        before = rss_bytes(broker.proc.pid)
        lorises = [loris(broker.port, 100 * MiB) for _ in range(20)]
        for _ in range(10):
            trips.once()
        grown = rss_bytes(broker.proc.pid) - before
        # Was 2 GB (each announced frame allocated whole); now each costs one 256 KiB step.
        assert grown < 64 * MiB, f"broker RSS grew by {grown / MiB:.0f} MiB"
        assert not any(closed_now(lorises))  # they may yet finish their requests
    finally:
        for s in lorises:
            s.close()
        trips.close()


def produce_request(value_size: int) -> ProduceRequest:
    records = bytes(encode_batch([(b"k", b"x" * value_size, [], 1_700_000_000_000)]))
    pt = ProduceRequest.TopicProduceData
    return ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        pt(name="t", partition_data=[pt.PartitionProduceData(index=0, records=records)])])


def test_request_memory_is_bounded_and_a_complete_request_still_gets_through(
        start_broker) -> None:
    broker = start_broker({"queued.max.request.bytes": str(8 * MiB),
                           "connections.max.idle.ms": "3000",
                           "message.max.bytes": str(4 * MiB)})
    trips = RoundTrips(broker.bootstrap)
    before = rss_bytes(broker.proc.pid)
    # Four clients send 6 MiB of 64 MiB requests, then stop: together more than the pool.
    lorises = [loris(broker.port, 64 * MiB) for _ in range(4)]
    senders = [threading.Thread(target=_send_quietly, args=(s, b"\0" * 6 * MiB), daemon=True)
               for s in lorises]
    for t in senders:
        t.start()
    try:
        trips.once()  # small requests never wait for the pool
        # A 3 MiB Produce needs pool memory that only requests still arriving hold: it is
        # let through (overdraft) rather than waiting for them forever.
        client = WireClient(broker.port)
        response = client.call(produce_request(3 * MiB), 7)
        assert response.responses[0].partition_responses[0].error_code == 0
        client.close()
        grown = rss_bytes(broker.proc.pid) - before
        assert grown < 48 * MiB, f"broker RSS grew by {grown / MiB:.0f} MiB"
        # connections.max.idle.ms ends the clients that stopped mid-request.
        assert all(closed_by_broker(s, 10.0) for s in lorises)
        trips.once()
    finally:
        for s in lorises:
            s.close()
        trips.close()


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # closed by the broker or the test
        sock.sendall(data)


def answer_times(port: int, busy: threading.Event) -> list[float]:
    """When each ApiVersions round trip on another connection completed, while ``busy``."""
    client = WireClient(port)
    done: list[float] = []
    try:
        while busy.is_set():
            assert client.call(ApiVersionsRequest(), 2).error_code == 0
            done.append(time.monotonic())
    finally:
        client.close()
    return done


def big_request(api: str) -> tuple[object, int]:
    from kafka.protocol.metadata import MetadataRequest

    if api == "ListOffsets":
        lt = ListOffsetsRequest.ListOffsetsTopic
        return ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[lt(
            name="t", partitions=[lt.ListOffsetsPartition(
                partition_index=p, current_leader_epoch=-1, timestamp=-1)
                for p in range(100_000)])]), 7
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=f"n{i}")
                                   for i in range(100_000)],
                           allow_auto_topic_creation=False), 8


@pytest.mark.parametrize("api", ["ListOffsets", "Metadata"])
def test_a_request_naming_100000_partitions_leaves_other_clients_served(
        start_broker, api: str) -> None:
    broker = start_broker()
    request, version = big_request(api)
    request.with_header(correlation_id=1, client_id="big")
    frame = bytes(request.encode(version=version, header=True, framed=True))
    big = WireClient(broker.port)
    busy = threading.Event()
    busy.set()
    result: list[list[float]] = []
    other = threading.Thread(target=lambda: result.append(answer_times(broker.port, busy)))
    other.start()
    try:
        big.send_raw(frame)
        sent = time.monotonic()
        big.sock.recv(1, socket.MSG_PEEK)  # the answer starts: the broker is done with it
        answered = time.monotonic()
        big.read_frame()  # the whole answer arrives (liveness, within TIMEOUT_S)
    finally:
        busy.clear()
        other.join(DEADLINE_S)
        big.close()
    # While the broker worked on the big request, the other connection kept getting
    # answers: no gap between them spans half of that time. (Before, the event loop was
    # busy with it throughout, and the other client waited for all of it.)
    window = [sent, *(t for t in result[0] if sent < t < answered), answered]
    longest_gap = max(b - a for a, b in itertools.pairwise(window))
    assert len(window) > 10 and longest_gap < (answered - sent) / 2, (
        f"{len(window) - 2} answers in {answered - sent:.3f} s, longest gap "
        f"{longest_gap:.3f} s")


def admin_error(admin: AdminClient, future: object) -> tuple[int, str]:
    with pytest.raises(KafkaException) as info:
        future.result(DEADLINE_S)  # type: ignore[attr-defined]
    error = info.value.args[0]
    return error.code(), error.str()


def partition_dirs(data_dir: Path, topic: str) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{topic}-"))


def test_create_topics_beyond_what_the_broker_can_open_is_refused_before_anything_exists(
        start_broker) -> None:
    broker = start_broker(open_files=1024)
    trips = RoundTrips(broker.bootstrap)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        # Kafka's controller refuses an operation of more than 10,000 metadata records.
        code, message = admin_error(admin, admin.create_topics(
            [NewTopic("huge", 10_000, 1)])["huge"])
        assert code == 44 and "excessively large batch operation" in message  # POLICY_VIOLATION
        # 2,000 partitions would keep 6,000 files open under a limit of 1,024.
        code, message = admin_error(admin, admin.create_topics(
            [NewTopic("big", 2_000, 1)])["big"])
        assert code == 37 and "ulimit -n" in message, message  # INVALID_PARTITIONS
        code, _ = admin_error(admin, admin.create_topics(
            [NewTopic("big", 2_000, 1)], validate_only=True)["big"])
        assert code == 37
        assert partition_dirs(broker.data_dir, "big") == []
        assert partition_dirs(broker.data_dir, "huge") == []
        assert "big" not in admin.list_topics(timeout=DEADLINE_S).topics
        trips.once()
        admin.create_topics([NewTopic("fits", 20, 1)])["fits"].result(DEADLINE_S)
        assert len(partition_dirs(broker.data_dir, "fits")) == 20
    finally:
        trips.close()


def connect_from(port: int, source: str, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        s = socket.socket()
        s.bind((source, 0))
        s.settimeout(DEADLINE_S)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def served_or_refused(port: int) -> bool:
    """A new client is answered (True) or sees its connection closed (False): never left
    waiting."""
    client = WireClient(port)
    try:
        return client.call(ApiVersionsRequest(), 2).error_code == 0
    except ConnectionError:
        return False
    finally:
        client.close()


def test_idle_connection_flood_under_a_low_open_file_limit(start_broker) -> None:
    broker = start_broker(open_files=1024)
    trips = RoundTrips(broker.bootstrap)  # connected before the flood
    flood: list[socket.socket] = []
    try:
        trips.once()
        flood = connect_from(broker.port, "127.0.0.1", 1000)
        for _ in range(5):
            trips.once()  # the clients already connected keep being served
        # Past the descriptors kept for the log, connections are closed at once: they
        # never hang, and accept() never runs out of descriptors.
        refused = sum(closed_now(flood))
        assert 0 < refused < 1000
        assert not served_or_refused(broker.port)  # still no room: cleanly refused
        for s in flood:
            s.close()
        flood = []
        deadline = time.monotonic() + DEADLINE_S
        while not served_or_refused(broker.port):  # room again once the broker sees them go
            assert time.monotonic() < deadline
            time.sleep(0.1)
        fresh = RoundTrips(broker.bootstrap, topic="after")
        fresh.once()
        fresh.close()
        log_size = broker.log_path.stat().st_size
        assert log_size < 200_000, f"broker log is {log_size} bytes"  # was 322 MB in 25 s
        assert broker.output().count("Rejected connection from") < 100  # of ~150 refused
    finally:
        for s in flood:
            s.close()
        trips.close()


def test_max_connections_per_ip_overrides_close_only_that_address(start_broker) -> None:
    broker = start_broker({"max.connections.per.ip.overrides": "127.0.0.2:5",
                           "max.connections": "40"})
    trips = RoundTrips(broker.bootstrap)
    socks: list[socket.socket] = []
    try:
        socks = connect_from(broker.port, "127.0.0.2", 8)
        closed = closed_now(socks)
        assert closed == [False] * 5 + [True] * 3
        trips.once()  # 127.0.0.1 is not capped by 127.0.0.2's override
        more = connect_from(broker.port, "127.0.0.1", 40)
        socks += more
        assert sum(closed_now(more)) >= 5  # max.connections
        trips.once()  # connections already open are served
    finally:
        for s in socks:
            s.close()
        trips.close()


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs with room for 300 files and directories (needs root; skipped otherwise)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=300", "tmpfs",
                           str(mount)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_create_topics_on_a_full_disk_answers_storage_error_and_leaves_nothing(
        start_broker, small_tmpfs: Path) -> None:
    data_dir = small_tmpfs / "data"
    broker = start_broker(data_dir=data_dir)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("small", 2, 1)])["small"].result(DEADLINE_S)
    # 100 partitions need 400 inodes: the file system runs out (ENOSPC) part way.
    code, message = admin_error(admin, admin.create_topics([NewTopic("big", 100, 1)])["big"])
    assert code == 56, message  # KAFKA_STORAGE_ERROR, not UNKNOWN_SERVER_ERROR (-1)
    assert partition_dirs(data_dir, "big") == []
    assert "big" not in admin.list_topics(timeout=DEADLINE_S).topics
    # Space comes back: the same topic can be created in full.
    subprocess.run(["mount", "-o", "remount,nr_inodes=5000", str(small_tmpfs)], check=True)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            admin.create_topics([NewTopic("big", 100, 1)])["big"].result(DEADLINE_S)
            break
        except KafkaException as exc:  # the directory may stay offline for a moment
            assert exc.args[0].code() == 56 and time.monotonic() < deadline
            time.sleep(0.5)
    assert len(partition_dirs(data_dir, "big")) == 100
