"""Ferry's own clients against a secured broker: ``ferry users`` creates a SCRAM user over
the PLAINTEXT listener, then the console tools (the ``kafka://`` backend) produce, list
and consume through SASL_SSL with ``--command-config``; wrong credentials are one line on
stderr and a non-zero exit."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
