"""Long-running commands: ``consume`` in follow mode, ``ferry up`` (the broker), and the
data-dir lock."""

from __future__ import annotations

import re
import signal

import pytest
from broker_process import free_port
from cli_helpers import Ferry, LineReader, assert_one_error_line, stop
from kafka import KafkaConsumer, TopicPartition

pytestmark = pytest.mark.integration


def test_follow_mode_stops_cleanly_on_sigint_and_holds_the_log(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "feed")
    ferry.ok("produce", "feed", input=b"one\ntwo\n")
    proc = ferry.start("consume", "feed", "--from-beginning", "--group", "tail")
    assert proc.stdout is not None and proc.stderr is not None
    out = LineReader(proc.stdout)
    assert out.read(2) == [b"one\n", b"two\n"]

    # An embedded log belongs to one process: a second one is told who holds it.
    other = ferry.run("topics", "list")
    assert_one_error_line(other, str(proc.pid))

    assert proc.poll() is None, "follow mode must keep running without limits"
    assert stop(proc, signal.SIGINT) == 0
    stderr = proc.stderr.read()
    assert b"Traceback" not in stderr
    assert stderr.endswith(b"Processed a total of 2 messages\n")
    assert out.rest() == b""

    # Closing committed the group's position: new records only.
    ferry.ok("produce", "feed", input=b"three\n")
    result = ferry.run("consume", "feed", "--group", "tail", "--timeout-ms", "1500")
    assert result.stdout == b"three\n", result.stderr


def test_up_serves_kafka_clients_holds_the_dir_and_stops_on_sigterm(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "kept")
    ferry.ok("produce", "kept", input=b"before-up\n")
    data_dir = ferry.tmp_path / "data"
    port = free_port()
    proc = ferry.start("up", "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{port}",
                       log=False)
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    ready = log.wait_for(b"commit log ready").decode()
    assert str(data_dir) in ready and re.search(r"\b1 topic\b", ready), ready
    log.wait_for(f"127.0.0.1:{port}".encode())
    log.wait_for(b"arrive with later releases")

    # The broker serves the directory's data to a Kafka client.
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", consumer_timeout_ms=10000)
    try:
        consumer.assign([TopicPartition("kept", 0)])
        consumer.seek_to_beginning()
        assert next(consumer).value == b"before-up"
    finally:
        consumer.close()

    # Another process is told who holds the directory and where its broker listens.
    result = ferry.run("topics", "list")
    line = assert_one_error_line(result, str(proc.pid))
    assert str(data_dir) in line and f"kafka://127.0.0.1:{port}" in line

    assert stop(proc, signal.SIGTERM) == 0
    rest = log.rest()
    assert b"Traceback" not in rest and b"closed" in rest
    # The lock is released: the directory is usable again.
    assert ferry.ok("topics", "list", "--exclude-internal") == b"kept\n"


def test_up_rejects_a_remote_log(ferry: Ferry) -> None:
    result = ferry.run("up", "--log", "kafka://127.0.0.1:9092", log=False)
    assert_one_error_line(result, "--data-dir")
