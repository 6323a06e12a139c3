"""Real Kafka clients against ``ferry broker``: produce with acks 0/1/all and every codec,
consume by assignment from the beginning, and check every key, value and header.

Clients: confluent-kafka (librdkafka), kafka-python 3 with its default settings (an
idempotent, acks=all producer), aiokafka, and kcat (librdkafka 2.0.2, which only compresses
if the broker advertises Produce v0). Topics are created through kafka-python's admin
client. The stored batches are checked too: compressed as the producer sent them.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from core.log.records import COMPRESSION_CODES, HEADER_SIZE, iter_batches

pytestmark = pytest.mark.integration

COUNT = 25
DEADLINE_S = 30.0
CLIENTS = ["confluent", "kafka-python", "aiokafka", "kcat"]
VARIANTS = ["acks0", "acks1", "acksall", "gzip", "snappy", "lz4", "zstd"]

XERIAL_MAGIC = b"\x82SNAPPY\x00"

Record = tuple[bytes, bytes, list[tuple[str, bytes]]]


def expected_records(topic: str) -> list[Record]:
    # kcat sends one fixed header per run; the others send two per record.
    if topic.startswith("kcat"):
        return [(b"key-%d" % i, b"value-%d-%s" % (i, b"x" * (i * 7)), [("origin", b"kcat")])
                for i in range(COUNT)]
    return [(b"key-%d" % i, b"value-%d-%s" % (i, b"x" * (i * 7)),
             [("seq", b"%d" % i), ("empty", b"")]) for i in range(COUNT)]


def settings(variant: str) -> tuple[str, str]:
    """(acks, compression) of a variant."""
    if variant.startswith("acks"):
        return {"acks0": "0", "acks1": "1", "acksall": "all"}[variant], "none"
    return "all", variant


@pytest.fixture(scope="module")
def bootstrap(module_broker) -> Iterator[str]:
    admin = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap)
    try:
        admin.create_topics([NewTopic(f"{c}-{v}", 1, 1) for c in CLIENTS for v in VARIANTS])
    finally:
        admin.close()
    yield module_broker.bootstrap


# ------------------------------------------------------------------ producers

def produce_confluent(bootstrap: str, topic: str, acks: str, codec: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                         "compression.type": codec, "linger.ms": 20})
    failures: list[object] = []
    for key, value, headers in expected_records(topic):
        producer.produce(topic, value, key, partition=0, headers=headers,
                         on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(DEADLINE_S) == 0 and not failures


def produce_kafka_python(bootstrap: str, topic: str, acks: str, codec: str) -> None:
    options: dict[str, object] = {}  # defaults: idempotent, acks=all
    if acks != "all":
        options["acks"] = int(acks)
    if codec != "none":
        options["compression_type"] = codec
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, **options)
    try:
        futures = [producer.send(topic, value=value, key=key, partition=0, headers=headers)
                   for key, value, headers in expected_records(topic)]
        producer.flush(DEADLINE_S)
        for future in futures:
            future.get(DEADLINE_S)
    finally:
        producer.close(DEADLINE_S)


def produce_aiokafka(bootstrap: str, topic: str, acks: str, codec: str) -> None:
    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20,
                                    acks=int(acks) if acks != "all" else "all",
                                    compression_type=None if codec == "none" else codec)
        await producer.start()
        try:
            sent = [await producer.send(topic, value, key=key, partition=0, headers=headers)
                    for key, value, headers in expected_records(topic)]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()

    asyncio.run(run())


def produce_kcat(bootstrap: str, topic: str, acks: str, codec: str) -> None:
    lines = b"".join(key + b"\t" + value + b"\n"
                     for key, value, _ in expected_records(topic))
    subprocess.run(["kcat", "-P", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "\t",
                    "-H", "origin=kcat", "-X", f"acks={acks}", "-X",
                    f"compression.codec={codec}", "-X", "linger.ms=20"],
                   input=lines, check=True, timeout=DEADLINE_S, capture_output=True)


# ------------------------------------------------------------------ consumers

def consume_confluent(bootstrap: str, topic: str) -> list[Record]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([CkTopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[Record] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(got) < COUNT and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.key(), msg.value(), list(msg.headers() or [])))
    finally:
        consumer.close()
    return got


def consume_kafka_python(bootstrap: str, topic: str) -> list[Record]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=int(DEADLINE_S * 1000))
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = []
        for msg in consumer:
            got.append((msg.key, msg.value, [(k, v) for k, v in msg.headers]))
            if len(got) == COUNT:
                break
        return got
    finally:
        consumer.close()


def consume_aiokafka(bootstrap: str, topic: str) -> list[Record]:
    async def run() -> list[Record]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([AioTopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
            got: list[Record] = []
            deadline = time.monotonic() + DEADLINE_S
            while len(got) < COUNT and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    got.extend((m.key, m.value, list(m.headers)) for m in messages)
            return got
        finally:
            await consumer.stop()

    return asyncio.run(run())


def consume_kcat(bootstrap: str, topic: str) -> list[Record]:
    result = subprocess.run(
        ["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
         "-q", "-c", str(COUNT), "-f", "%k\t%s\t%h\n"],
        check=True, timeout=DEADLINE_S, capture_output=True)
    got = []
    for line in result.stdout.splitlines():
        key, value, headers = line.split(b"\t")
        parsed = [(k.decode(), v) for k, _, v in (h.partition(b"=") for h in headers.split(b","))]
        got.append((key, value, parsed))
    return got


PRODUCERS = {"confluent": produce_confluent, "kafka-python": produce_kafka_python,
             "aiokafka": produce_aiokafka, "kcat": produce_kcat}
CONSUMERS = {"confluent": consume_confluent, "kafka-python": consume_kafka_python,
             "aiokafka": consume_aiokafka, "kcat": consume_kcat}


def stored_batches(data_dir: Path, topic: str) -> list[tuple[bytes, object]]:
    """(record bytes after the 61-byte header, header) of every batch in the partition."""
    data = b"".join(p.read_bytes() for p in sorted((data_dir / f"{topic}-0").glob("*.log")))
    return [(data[pos + HEADER_SIZE : pos + header.size], header)
            for pos, header in iter_batches(data)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("client", CLIENTS)
def test_produce_then_consume_from_the_beginning(bootstrap: str, module_broker,
                                                 client: str, variant: str) -> None:
    topic = f"{client}-{variant}"
    acks, codec = settings(variant)
    PRODUCERS[client](bootstrap, topic, acks, codec)
    assert CONSUMERS[client](bootstrap, topic) == expected_records(topic)
    batches = stored_batches(module_broker.data_dir, topic)
    assert sum(h.records_count for _, h in batches) == COUNT
    # Stored as produced. librdkafka sends a batch uncompressed when compressing does not
    # make it smaller, so codec-less batches may sit among the compressed ones.
    codecs = {h.compression for _, h in batches}
    assert COMPRESSION_CODES[codec] in codecs and codecs <= {0, COMPRESSION_CODES[codec]}
    if client == "kafka-python" and acks == "all":
        # Its default producer is idempotent: batches carry a producer id and sequences.
        assert all(h.producer_id >= 0 and h.base_sequence >= 0 for _, h in batches)
    if codec == "snappy":
        # Both snappy framings are stored as sent: xerial (Java's, kafka-python's and
        # aiokafka's) and raw (librdkafka's).
        xerial = {body.startswith(XERIAL_MAGIC) for body, h in batches if h.compression}
        assert xerial == {client in ("kafka-python", "aiokafka")}


def test_no_client_request_was_refused(bootstrap: str, module_broker) -> None:
    """Runs after the tests above: every request those clients sent was understood (a
    refused one closes the connection with a warning that clients silently retry past)."""
    output = module_broker.log_path.read_text(errors="replace")
    assert "closing connection" not in output and "Traceback" not in output, output
