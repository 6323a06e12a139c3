"""Ferry's own clients against a secured broker: ``ferry users`` creates a SCRAM user over
the PLAINTEXT listener, then the console tools (the ``kafka://`` backend) produce, list
and consume through SASL_SSL with ``--command-config``; wrong credentials are one line on
stderr and a non-zero exit."""

from __future__ import annotations

import subprocess
import sys

import pytest
from broker_process import free_port

pytestmark = pytest.mark.integration


def ferry(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def secured(secure_broker, tls, tmp_path):
    broker, ports = secure_broker(
        {"SECURE": "SASL_SSL"},
        {"ssl.keystore.location": str(tls.server),
         "listener.name.secure.sasl.enabled.mechanisms": "SCRAM-SHA-512",
         "connection.failed.authentication.delay.ms": "10"})
    return broker, f"127.0.0.1:{ports['SECURE']}", tmp_path


def _client_config(path, password: str) -> str:
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                    f"sasl.username=tool\nsasl.password={password}\n"
                    f"ssl.ca.location={path.parent / 'ca.crt'}\n")
    return str(path)


def test_users_and_console_tools_over_sasl_ssl(secured, tls):
    broker, secure, tmp = secured
    (tmp / "ca.crt").write_bytes(tls.ca.read_bytes())
    admin_log = f"kafka://{broker.bootstrap}"
    made = ferry("users", "set", "tool", "--mechanism", "SCRAM-SHA-512", "--log", admin_log,
                 stdin="tool-secret\n")
    assert made.returncode == 0, made.stderr
    listed = ferry("users", "list", "--log", admin_log)
    assert "tool\tSCRAM-SHA-512 (iterations 4096)" in listed.stdout

    good = _client_config(tmp / "client.properties", "tool-secret")
    log = f"kafka://{secure}"
    created = ferry("topics", "create", "secured", "--log", log, "--command-config", good)
    assert created.returncode == 0, created.stderr
    produced = ferry("produce", "secured", "--log", log, "--command-config", good,
                     stdin="one\ntwo\n")
    assert produced.returncode == 0, produced.stderr
    consumed = ferry("consume", "secured", "--log", log, "--command-config", good,
                     "--from-beginning", "--max-messages", "2")
    assert consumed.stdout.split() == ["one", "two"], consumed.stderr

    bad = _client_config(tmp / "bad.properties", "guess")
    refused = ferry("topics", "list", "--log", log, "--command-config", bad)
    assert refused.returncode != 0
    assert "authentication as 'tool' failed" in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.splitlines()) == 1

    deleted = ferry("users", "delete", "tool", "--log", admin_log)
    assert deleted.returncode == 0, deleted.stderr
    assert ferry("topics", "list", "--log", log, "--command-config", good).returncode != 0


def test_connect_worker_reaches_a_secured_broker(secured, tls):
    """A standalone worker on kafka://SASL_SSL, its security settings in the worker config,
    runs a FileStream source whose records arrive in the topic."""
    import json
    import os
    import time

    from confluent_kafka import Consumer

    broker, secure, tmp = secured
    made = ferry("users", "set", "worker", "--mechanism", "SCRAM-SHA-512", "--log",
                 f"kafka://{broker.bootstrap}", stdin="worker-secret\n")
    assert made.returncode == 0, made.stderr
    created = ferry("topics", "create", "from-file", "--log", f"kafka://{broker.bootstrap}")
    assert created.returncode == 0, created.stderr
    (tmp / "in.txt").write_text("a\nb\n")
    (tmp / "worker.properties").write_text(
        "key.converter=StringConverter\nvalue.converter=StringConverter\n"
        "offset.flush.interval.ms=200\nsecurity.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\nsasl.username=worker\nsasl.password=worker-secret\n"
        f"ssl.ca.location={tls.ca}\n")
    (tmp / "source.json").write_text(json.dumps({"name": "fs", "config": {
        "connector.class": "connectors.file.source_connector:FileStreamSourceConnector",
        "tasks.max": "1", "topic": "from-file", "file": str(tmp / "in.txt")}}))
    env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "--log", f"kafka://{secure}", "connect",
         "standalone", "--rest", f"127.0.0.1:{free_port()}", str(tmp / "worker.properties"),
         str(tmp / "source.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["from-file"])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 2 and time.monotonic() < deadline and proc.poll() is None:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
        assert values == [b"a", b"b"], proc.stderr.read1().decode(errors="replace") \
            if proc.poll() is not None else values
    finally:
        consumer.close()
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()


def test_users_command_mistakes_are_one_line(secured, tmp_path):
    broker, secure, _ = secured
    wrong = tmp_path / "wrong.properties"
    wrong.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.username=nobody\nsasl.password=x\nssl.ca.location=/nonexistent\n")
    for args in (["users", "list", "--log", "embedded:" + str(tmp_path / "d")],
                 ["users", "list", "--log", f"kafka://{secure}", "--command-config",
                  str(wrong)],
                 ["users", "set", "x", "--log", f"kafka://{broker.bootstrap}",
                  "--password-file", str(tmp_path / "missing")],
                 ["users", "set", "x", "--log", f"kafka://{broker.bootstrap}",
                  "--iterations", "10"]):
        result = ferry(*args, stdin="pw\n")
        assert result.returncode != 0, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ferry: error:"), (args, lines)
