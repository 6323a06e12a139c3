"""Long-running commands: ``consume`` in follow mode, ``ferry up`` (the broker and the
Connect worker on one log), and the data-dir lock."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest
import requests
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
                       "--connect-rest", f"127.0.0.1:{free_port()}", "--no-registry",
                       log=False)
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    ready = log.wait_for(b"commit log ready").decode()
    assert str(data_dir) in ready and re.search(r"\b1 topic\b", ready), ready
    summary = log.wait_for(b"ferry up ready:").decode()
    assert f"broker 127.0.0.1:{port}," in summary and f"data {data_dir}," in summary, summary
    assert "connect http://127.0.0.1:" in summary and "logs stderr (INFO, text)" in summary

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
    # (The Connect worker of `up` keeps its source offsets in connect-offsets.)
    assert ferry.ok("topics", "list", "--exclude-internal").split() == [b"connect-offsets",
                                                                       b"kept"]


def test_up_rejects_a_remote_log(ferry: Ferry) -> None:
    result = ferry.run("up", "--log", "kafka://127.0.0.1:9092", log=False)
    assert_one_error_line(result, "--data-dir")


def _wait_until(predicate, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _start_up(ferry: Ferry, data_dir: Path, kafka_port: int, rest_port: int,
              registry_port: int | None = None):
    registry = (["--registry-listen", f"127.0.0.1:{registry_port}"] if registry_port
                else ["--no-registry"])
    proc = ferry.start("up", "--data-dir", str(data_dir), "--listen",
                       f"127.0.0.1:{kafka_port}", "--connect-rest", f"127.0.0.1:{rest_port}",
                       *registry, log=False)
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    log.wait_for(f"Connect REST API on http://127.0.0.1:{rest_port}".encode())
    if registry_port:
        log.wait_for(f"Schema Registry on http://127.0.0.1:{registry_port}".encode())
    log.wait_for(b"ferry up ready:")
    return proc, log


def _topic_values(port: int, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", consumer_timeout_ms=3000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            values += [m.value for m in consumer]
        return values
    finally:
        consumer.close()


def test_up_runs_a_connect_worker_on_the_same_log(ferry: Ferry) -> None:
    data_dir, source = ferry.tmp_path / "data", ferry.tmp_path / "in.txt"
    source.write_text("a\nb\nc\n")
    kafka_port, rest_port = free_port(), free_port()
    rest = f"http://127.0.0.1:{rest_port}"
    proc, log = _start_up(ferry, data_dir, kafka_port, rest_port)
    try:
        created = requests.post(f"{rest}/connectors", timeout=10, json={
            "name": "lines", "config": {
                "connector.class": "FileStreamSource", "file": str(source), "topic": "lines",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter"}})
        assert created.status_code == 201, created.text
        # What the worker writes, Kafka clients read from the broker: one log.
        assert _topic_values(kafka_port, "lines", 3) == [b"a", b"b", b"c"]
        # The worker's id is its REST address.
        status = requests.get(f"{rest}/connectors/lines/status", timeout=10).json()
        assert status["connector"]["worker_id"] == f"127.0.0.1:{rest_port}"
    finally:
        assert stop(proc, signal.SIGTERM) == 0
    assert b"Traceback" not in log.rest()

    # Restarted, the stack runs the connector again from its stored offset.
    with source.open("a") as f:
        f.write("d\n")
    proc, log = _start_up(ferry, data_dir, kafka_port, rest_port)
    try:
        assert requests.get(f"{rest}/connectors", timeout=10).json() == ["lines"]
        _wait_until(lambda: requests.get(f"{rest}/connectors/lines/status", timeout=10)
                    .json()["tasks"][0]["state"] == "RUNNING", "the task to run")
        assert _topic_values(kafka_port, "lines", 4) == [b"a", b"b", b"c", b"d"]
        saved = json.loads((data_dir / ".connect" / "connectors.json").read_text())
        assert "lines" in json.dumps(saved)
    finally:
        assert stop(proc, signal.SIGTERM) == 0
    assert b"Traceback" not in log.rest()


def test_up_reports_a_taken_connect_port_in_one_line(ferry: Ferry) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = ferry.run("up", "--data-dir", str(ferry.tmp_path / "data"), "--listen",
                           f"127.0.0.1:{free_port()}", "--connect-rest", f"127.0.0.1:{port}",
                           "--no-registry", log=False)
    # Server logging came first; the failure itself is one error line, and no traceback.
    stderr = result.stderr.decode()
    assert result.returncode == 1 and "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("ferry: error:")]
    assert len(errors) == 1 and f"127.0.0.1:{port}: Address already in use" in errors[0]
    assert stderr.rstrip().endswith(errors[0])


def test_up_runs_the_schema_registry_on_the_same_log(ferry: Ferry) -> None:
    data_dir = ferry.tmp_path / "data"
    kafka_port, rest_port, registry_port = free_port(), free_port(), free_port()
    registry = f"http://127.0.0.1:{registry_port}"
    schema = {"schema": json.dumps({"type": "record", "name": "Order",
                                    "fields": [{"name": "id", "type": "long"}]})}
    proc, log = _start_up(ferry, data_dir, kafka_port, rest_port, registry_port)
    try:
        made = requests.post(f"{registry}/subjects/orders-value/versions", json=schema,
                             timeout=10)
        assert made.status_code == 200, made.text
        schema_id = made.json()["id"]
        # The registry's topic is on the stack's log, visible to Kafka clients.
        assert len(_topic_values(kafka_port, "_schemas", 1)) >= 1
    finally:
        assert stop(proc, signal.SIGTERM) == 0
    assert b"Traceback" not in log.rest()

    proc, log = _start_up(ferry, data_dir, kafka_port, rest_port, registry_port)
    try:
        found = requests.post(f"{registry}/subjects/orders-value", json=schema, timeout=10)
        assert found.status_code == 200 and found.json()["id"] == schema_id, found.text
    finally:
        assert stop(proc, signal.SIGTERM) == 0
    assert b"Traceback" not in log.rest()


@pytest.mark.parametrize("flags, fragment", [
    (["--registry-listen", "nonsense"], "--registry-listen 'nonsense'"),
    (["--connect-rest", "127.0.0.1:notaport"], "--connect-rest '127.0.0.1:notaport'"),
    (["--connect-config", "/nonexistent/worker.properties"], "/nonexistent/worker.properties"),
])
def test_up_rejects_bad_service_flags_before_opening_the_log(ferry: Ferry, flags, fragment):
    data_dir = ferry.tmp_path / "data"
    result = ferry.run("up", "--data-dir", str(data_dir), "--listen",
                       f"127.0.0.1:{free_port()}", *flags, log=False)
    assert_one_error_line(result, fragment)
    assert not data_dir.exists()
