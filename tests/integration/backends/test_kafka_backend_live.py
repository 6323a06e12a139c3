"""KafkaBackend against a real ``ferry broker``: wire compatibility with librdkafka, a broker
that stops or restarts, concurrent callers, and the CLI on ``kafka://``."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import confluent_kafka as ck
import pytest
from broker_process import BrokerProcess

from core.backends import OffsetAndMetadata, ProducerRecord, TopicPartition
from core.backends import errors as be
from core.backends.kafka import KafkaBackend

pytestmark = pytest.mark.integration

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
WAIT_S = 30.0  # bound on anything a test waits for; never reached when the code is right


def _records(n: int) -> list[ProducerRecord]:
    return [ProducerRecord(key=None if i % 3 == 0 else b"k%d" % i, value=b"value-%d" % i,
                           headers=[("n", b"%d" % i), ("empty", None)] if i % 2 else [],
                           timestamp=1_700_000_000_000 + i) for i in range(n)]


def _consume_with_librdkafka(bootstrap: str, topic: str, partitions: int,
                             expected: int) -> list[Any]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                            "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.5):
                assert m.error() is None, m.error()
                messages.append(m)
    finally:
        consumer.close()
    return messages


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_reads_what_the_backend_produced(broker: BrokerProcess,
                                                    client_config: dict[str, str], codec: str):
    backend = KafkaBackend.from_url(f"kafka://{broker.bootstrap}",
                                    {**client_config, "compression.type": codec})
    try:
        backend.create_topic("wire", 3)
        records = _records(60)
        metas = backend.produce("wire", records)
    finally:
        backend.close()
    got = {(m.partition(), m.offset()): m
           for m in _consume_with_librdkafka(broker.bootstrap, "wire", 3, len(records))}
    assert len(got) == len(records)
    for record, meta in zip(records, metas, strict=True):
        m = got[(meta.partition, meta.offset)]
        assert (m.key(), m.value(), m.timestamp()) == (
            record.key, record.value, (ck.TIMESTAMP_CREATE_TIME, record.timestamp))
        assert [tuple(h) for h in m.headers() or []] == [tuple(h) for h in record.headers]


@pytest.mark.parametrize("codec", CODECS)
def test_backend_reads_what_librdkafka_produced(broker: BrokerProcess, backend: KafkaBackend,
                                               codec: str):
    backend.create_topic("wire", 1)
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec,
                            "linger.ms": 20})  # several records per batch, compressed together
    records = _records(200)
    for r in records:
        producer.produce("wire", r.value, r.key, headers=list(r.headers),
                         timestamp=r.timestamp)
    assert producer.flush(WAIT_S) == 0
    tp = TopicPartition("wire", 0)
    got, offset = [], 0
    for _ in range(len(records)):  # each fetch returns at least one record until the end
        result = backend.fetch({tp: offset})[tp]
        if not result.records:
            break
        got += result.records
        offset = result.next_offset
    assert [r.offset for r in got] == list(range(len(records)))
    assert [(r.key, r.value, r.timestamp, [tuple(h) for h in r.headers]) for r in got] == [
        (r.key, r.value, r.timestamp, [tuple(h) for h in r.headers]) for r in records]
    # A fetch from the middle of a compressed batch starts exactly at the offset asked for.
    assert backend.fetch({tp: 101})[tp].records[0].offset == 101


def test_group_offsets_and_membership_are_shared_with_librdkafka(broker: BrokerProcess,
                                                                 backend: KafkaBackend):
    backend.create_topic("shared", 2)
    tp = TopicPartition("shared", 1)
    backend.commit_offsets("by-ferry", {tp: OffsetAndMetadata(7, "from ferry")})
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "by-ferry",
                            "enable.auto.commit": False})
    try:
        (committed,) = consumer.committed([ck.TopicPartition("shared", 1)], timeout=WAIT_S)
        assert (committed.offset, committed.metadata) == (7, "from ferry")
    finally:
        consumer.close()

    live = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "live",
                        "client.id": "rdkafka-member", "enable.auto.commit": False,
                        "session.timeout.ms": 10000})
    try:
        live.subscribe(["shared"])
        deadline = time.monotonic() + WAIT_S
        while not live.assignment() and time.monotonic() < deadline:
            live.poll(0.2)
        assert len(live.assignment()) == 2
        live.commit(offsets=[ck.TopicPartition("shared", 0, 3)], asynchronous=False)
        desc = backend.describe_group("live")
        assert (desc.state, desc.protocol_type) == ("Stable", "consumer")
        assert [m.client_id for m in desc.members] == ["rdkafka-member"]
        assert ("live", "consumer") in backend.list_groups()
        assert backend.fetch_offsets("live")[TopicPartition("shared", 0)].offset == 3
    finally:
        live.close()


def _outcome(fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn`` in a thread and return what it raised; a hang fails the test."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            box.append(None)
        except BaseException as exc:  # handed back to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert box, "the call hung past its deadline"
    return box[0]


def test_stopped_broker_gives_backend_unavailable_within_the_timeout(broker: BrokerProcess):
    backend = KafkaBackend.from_url(f"kafka://{broker.bootstrap}",
                                    {"request.timeout.ms": "1000",
                                     "default.api.timeout.ms": "1000",
                                     "delivery.timeout.ms": "1000"})
    try:
        backend.create_topic("t", 1)
        backend.produce("t", [ProducerRecord(value=b"x")])
        tp = TopicPartition("t", 0)
        started = threading.Event()

        def long_poll() -> None:
            started.set()
            backend.fetch({tp: 1}, max_wait_ms=2000)

        blocked: list[BaseException | None] = []
        poller = threading.Thread(target=lambda: blocked.append(_outcome(long_poll)))
        poller.start()
        started.wait(WAIT_S)
        broker.kill()  # SIGKILL: connections reset, nothing answers any more
        poller.join(WAIT_S)
        calls = [backend.list_topics, lambda: backend.produce("t", [ProducerRecord(value=b"y")]),
                 lambda: backend.fetch({tp: 0}), lambda: backend.describe_group("g"),
                 lambda: backend.heartbeat("g", generation_id=1, member_id="m")]
        for call in calls:
            error = _outcome(call)
            assert isinstance(error, be.BackendUnavailableError), error
            assert "in 1000 ms" in str(error)  # retried for the configured time, then gave up
        # The long poll either saw the broker die or ran out of retries: never a hang.
        assert blocked and isinstance(blocked[0], be.BackendUnavailableError), blocked
    finally:
        backend.close()


def test_backend_carries_on_after_a_broker_restart(broker: BrokerProcess,
                                                   backend: KafkaBackend):
    backend.create_topic("t", 1)
    backend.produce("t", [ProducerRecord(value=b"before")])
    broker.restart()
    meta = backend.produce("t", [ProducerRecord(value=b"after")])[0]
    assert meta.offset == 1
    tp = TopicPartition("t", 0)
    assert [r.value for r in backend.fetch({tp: 0})[tp].records] == [b"before", b"after"]


def test_concurrent_producers_and_fetchers_share_one_backend(backend: KafkaBackend):
    backend.create_topic("busy", 4)
    calls, per_call = 40, 25

    def produce(i: int) -> list[tuple[int, int]]:
        metas = backend.produce("busy", [ProducerRecord(key=b"%d" % i, value=b"%d" % i)] * per_call)
        return [(m.partition, m.offset) for m in metas]

    def fetch_all(_: int) -> int:
        positions = {TopicPartition("busy", p): 0 for p in range(4)}
        return sum(len(r.records) for r in backend.fetch(positions).values())

    with ThreadPoolExecutor(8) as pool:
        produced = pool.map(produce, range(calls))
        list(pool.map(fetch_all, range(calls)))  # interleaved with the producers
        placed = [p for call in produced for p in call]
    assert len(set(placed)) == calls * per_call  # no offset handed out twice
    hw = backend.list_offsets([TopicPartition("busy", p) for p in range(4)], -1)
    assert sum(hw.values()) == calls * per_call


def test_cli_works_on_a_kafka_url(broker: BrokerProcess, backend: KafkaBackend):
    backend.create_topic("from-backend", 2)
    url = f"kafka://{broker.bootstrap}"

    def ferry(*args: str) -> str:
        result = subprocess.run([sys.executable, "-m", "core.cli", *args, "--log", url],
                                capture_output=True, timeout=WAIT_S, check=False)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result.stdout.decode()

    ferry("topics", "create", "from-cli", "--partitions", "3")
    listed = ferry("topics", "list").split()
    assert {"from-backend", "from-cli"} <= set(listed)
    assert backend.partition_count("from-cli") == 3
    assert "from-cli" in ferry("topics", "describe", "from-cli")


def test_broker_refusals_map_to_backend_errors(backend: KafkaBackend):
    backend.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    with pytest.raises(be.InvalidRecordError, match="key"):
        backend.produce("compacted", [ProducerRecord(value=b"no key")])
    with pytest.raises(be.InvalidConfigError) as info:
        backend.alter_topic_configs("compacted", {"segment.bytes": "huge"})
    assert info.value.key == "segment.bytes"
    with pytest.raises(be.InvalidTopicError, match="replication factor"):
        backend.create_topic("replicated", 1, replication_factor=3)
