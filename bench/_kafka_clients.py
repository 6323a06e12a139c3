"""Kafka-protocol workload drivers for the broker benchmark: confluent-kafka and kcat.

Every driver returns the seconds its measured section took and checks that the whole
workload went through (delivery errors, message and byte counts); it raises
``BenchmarkError`` otherwise. Connection set-up and metadata come before the clock for the
in-process client; kcat is timed as a whole process, start-up included (tens of ms).
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger(__name__)

METADATA_TIMEOUT_S = 30.0
# A run that makes no progress for this long has failed (broker stuck or dead).
STALL_TIMEOUT_S = 60.0
CONSUME_BATCH = 10_000

# Producer settings, the same for confluent-kafka and kcat (both are librdkafka):
# batches are bounded by batch.size (1 MB, below the broker's default message.max.bytes)
# rather than by a message count; linger.ms is librdkafka's default, stated for the record.
# The local queue holds the whole run, so produce calls never block on a full queue and the
# clock measures the broker, not back-pressure tuning.
PRODUCER_TUNING: dict[str, str] = {
    "linger.ms": "5",
    "batch.size": "1000000",
    "batch.num.messages": "1000000",
    "compression.type": "none",
    "enable.idempotence": "false",
    "queue.buffering.max.kbytes": "2097152",
}
# Consumer settings: big per-partition fetches and a deep prefetch queue, so that the
# client's fetcher thread keeps several fetches in flight while Python drains batches.
CONSUMER_TUNING: dict[str, str] = {
    "fetch.max.bytes": "52428800",
    "fetch.message.max.bytes": "8388608",
    "queued.min.messages": "1000000",
    "queued.max.messages.kbytes": "1048576",
    "fetch.wait.max.ms": "100",
}


class BenchmarkError(RuntimeError):
    """A workload did not complete: lost messages, delivery errors, a stall, a dead tool."""


CLIENT_VERSION = (f"confluent-kafka {version('confluent-kafka')}, "
                  f"librdkafka {confluent_kafka.libversion()[0]}")


def _log_client_error(err: KafkaError) -> None:
    # librdkafka retries transient errors itself; the drivers' own checks (delivery
    # reports, counts, stall timeouts) decide whether a run failed.
    log.warning("client error: %s", err)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` with CreateTopics; fall back to auto-creation by Metadata."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, partitions, 1)],
                                 operation_timeout=METADATA_TIMEOUT_S)[topic]
    try:
        future.result(timeout=METADATA_TIMEOUT_S)
    except KafkaException as exc:
        log.warning("CreateTopics for %s failed (%s); relying on auto-creation", topic, exc)
        if partitions != 1:
            raise BenchmarkError(f"cannot create {topic} with {partitions} partitions: {exc}"
                                 ) from exc
    wait_for_leaders(bootstrap, topic, partitions)


def wait_for_leaders(bootstrap: str, topic: str, partitions: int) -> None:
    """Poll Metadata (which may auto-create the topic) until every partition has a leader."""
    producer = Producer({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + METADATA_TIMEOUT_S
    state = "no metadata"
    while time.monotonic() < deadline:
        try:
            meta = producer.list_topics(topic, timeout=5).topics.get(topic)
        except KafkaException as exc:
            state = str(exc)
        else:
            if meta is not None and meta.error is None:
                leaders = [p.leader for p in meta.partitions.values()]
                if len(leaders) == partitions and min(leaders) >= 0:
                    return
                state = f"partitions {sorted(meta.partitions)} leaders {leaders}"
            elif meta is not None:
                state = str(meta.error)
        time.sleep(0.1)
    raise BenchmarkError(f"topic {topic} not ready after {METADATA_TIMEOUT_S:.0f} s: {state}")


def delete_topic(bootstrap: str, topic: str) -> None:
    """Best-effort DeleteTopics, to keep the data directory small between runs."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.delete_topics([topic], operation_timeout=METADATA_TIMEOUT_S)[topic].result(
            timeout=METADATA_TIMEOUT_S)
    except KafkaException as exc:
        log.info("DeleteTopics %s failed (%s); leaving it in place", topic, exc)


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    """The sum of the partitions' high watermarks, by ListOffsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    try:
        return sum(consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(topic, p), timeout=METADATA_TIMEOUT_S)[1]
            for p in range(partitions))
    finally:
        consumer.close()


def producer_config(bootstrap: str, acks: str, messages: int) -> dict[str, str | int | bool]:
    return {"bootstrap.servers": bootstrap, "acks": acks, **PRODUCER_TUNING,
            "queue.buffering.max.messages": max(100_000, messages + 1)}


def consumer_config(bootstrap: str) -> dict[str, str | int | bool]:
    return {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
            "enable.auto.commit": False, "enable.partition.eof": False,
            "auto.offset.reset": "earliest", **CONSUMER_TUNING}


def confluent_produce(bootstrap: str, topic: str, partitions: int, values: Sequence[bytes],
                      messages: int, acks: str,
                      security: Mapping[str, str] | None = None) -> float:
    """Seconds from the first ``produce_batch`` to the end of ``flush()``.

    Messages go in ``produce_batch`` calls of ``len(values)``, confluent-kafka's fastest
    produce path (about 5x ``produce()`` per message in Python); with one partition they
    are sent to partition 0, otherwise librdkafka's default partitioner spreads them.
    Delivery reports are requested for failures only; any failure fails the run.
    """
    if not hasattr(Producer, "produce_batch"):
        raise BenchmarkError(f"{CLIENT_VERSION} has no Producer.produce_batch; this benchmark "
                             "needs a newer confluent-kafka (2.16 has it)")
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer({**producer_config(bootstrap, acks, messages),
                         "delivery.report.only.error": True, "on_delivery": on_delivery,
                         "error_cb": _log_client_error, **(security or {})})
    producer.list_topics(topic, timeout=METADATA_TIMEOUT_S)  # connect before the clock
    batch = [{"value": v} for v in values]
    target = {"partition": 0} if partitions == 1 else {}
    start = time.perf_counter()
    sent = 0
    while sent < messages:
        chunk = batch if messages - sent >= len(batch) else batch[:messages - sent]
        queued = producer.produce_batch(topic, chunk, **target)
        if queued != len(chunk):
            raise BenchmarkError(f"produce_batch queued {queued} of {len(chunk)} messages")
        sent += queued
        producer.poll(0)
    left = producer.flush(STALL_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    if left or failures:
        raise BenchmarkError(f"{left} messages undelivered after flush; "
                             f"{len(failures)} failed, first: {failures[:1]}")
    return elapsed


def confluent_consume(bootstrap: str, topic: str, partitions: int, messages: int,
                      value_size: int, security: Mapping[str, str] | None = None) -> float:
    """Seconds from ``assign()`` at the log start to the ``messages``-th message.

    Reads with ``consume(num_messages=10000)`` and touches every message (its error and
    its value's length, in C-level loops), checking the payload byte count at the end.
    """
    consumer = Consumer({**consumer_config(bootstrap), "error_cb": _log_client_error,
                         **(security or {})})
    try:
        consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S)  # connect before the clock
        start = time.perf_counter()
        consumer.assign([confluent_kafka.TopicPartition(topic, p,
                                                        confluent_kafka.OFFSET_BEGINNING)
                         for p in range(partitions)])
        count = payload = 0
        last_progress = start
        while count < messages:
            # Never ask for more than is left: consume() waits out its timeout for a
            # batch it cannot fill.
            batch = consumer.consume(num_messages=min(CONSUME_BATCH, messages - count),
                                     timeout=1.0)
            now = time.perf_counter()
            if not batch:
                if now - last_progress > STALL_TIMEOUT_S:
                    raise BenchmarkError(f"consumer stalled at {count} of {messages}")
                continue
            last_progress = now
            if any(map(Message.error, batch)):
                errors = [m.error() for m in batch if m.error() is not None]
                raise BenchmarkError(f"consume returned errors: {errors[:3]}")
            payload += sum(map(len, map(Message.value, batch)))
            count += len(batch)
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    if count != messages or payload != messages * value_size:
        raise BenchmarkError(f"consumed {count} messages / {payload} B, expected "
                             f"{messages} / {messages * value_size} B")
    return elapsed


def _tuning_flags(settings: dict[str, str]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]


def kcat_produce_argv(kcat: str, bootstrap: str, topic: str, partitions: int,
                      input_file: Path, acks: str, messages: int) -> list[str]:
    argv = [kcat, "-P", "-q", "-b", bootstrap, "-t", topic]
    if partitions == 1:
        argv += ["-p", "0"]
    tuning = {"acks": acks, **PRODUCER_TUNING,
              "queue.buffering.max.messages": str(max(100_000, messages + 1))}
    return [*argv, *_tuning_flags(tuning), "-l", str(input_file)]


def kcat_consume_argv(kcat: str, bootstrap: str, topic: str, messages: int) -> list[str]:
    return [kcat, "-C", "-q", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e",
            "-c", str(messages), *_tuning_flags(CONSUMER_TUNING)]


def kcat_produce(argv: list[str]) -> float:
    """Wall-clock seconds of one ``kcat -P -l FILE`` process (one message per line)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=STALL_TIMEOUT_S * 10, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BenchmarkError(f"kcat producer did not finish: {shlex.join(argv)}") from exc
    elapsed = time.perf_counter() - start
    stderr = done.stderr.decode(errors="replace").strip()
    if done.returncode != 0:
        raise BenchmarkError(f"kcat producer exited with {done.returncode}: {stderr[-2000:]}")
    if stderr:
        log.warning("kcat producer: %s", stderr[-2000:])
    return elapsed


def kcat_consume(argv: list[str], messages: int, value_size: int) -> float:
    """Wall-clock seconds of one ``kcat -C -e -c N`` process, its output counted.

    kcat writes each value and a newline to a pipe this process drains in 1 MiB reads;
    the byte count proves that all ``messages`` values arrived.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    # Bounds the blocking reads below: killing kcat closes the pipe and ends them.
    watchdog = threading.Timer(STALL_TIMEOUT_S * 10, proc.kill)
    watchdog.start()
    received = 0
    fd = proc.stdout.fileno()
    try:
        while chunk := os.read(fd, 1 << 20):
            received += len(chunk)
        proc.wait(STALL_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise BenchmarkError(f"kcat consumer did not exit: {shlex.join(argv)}") from exc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    elapsed = time.perf_counter() - start
    expected = messages * (value_size + 1)
    if proc.returncode != 0 or received != expected:
        raise BenchmarkError(f"kcat consumer exited with {proc.returncode} after {received} "
                             f"of {expected} bytes: {stderr[-2000:]}")
    return elapsed
