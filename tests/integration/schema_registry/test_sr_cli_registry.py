"""``ferry registry`` as a subprocess: serving, clean shutdown, config files, CLI mistakes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from broker_process import free_port

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 30.0
SCHEMA = '{"type":"record","name":"A","fields":[{"name":"f","type":"string"}]}'


def _ferry(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "core.cli", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_serving(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"ferry registry exited: {proc.communicate()[1].decode()}")
        try:
            if requests.get(url + "/subjects", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"ferry registry did not serve within {START_TIMEOUT_S} s")


def _stop(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"ferry registry ignored SIGTERM:\n{err.decode()}") from None
    return proc.returncode, err.decode()


def test_serves_and_stops_cleanly_on_sigterm(tmp_path: Path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _ferry("registry", "--log", f"embedded:{tmp_path / 'log'}", "--listen",
                  f"127.0.0.1:{port}", cwd=tmp_path)
    try:
        _wait_serving(proc, url)
        response = requests.post(f"{url}/subjects/a/versions", json={"schema": SCHEMA},
                                 timeout=30)
        assert response.json()["id"] == 1
    finally:
        code, err = _stop(proc)
    assert code == 0, err
    assert "Traceback" not in err
    assert "received SIGTERM, stopping the Schema Registry" in err


def test_confluent_properties_file(tmp_path: Path):
    port = free_port()
    config = tmp_path / "schema-registry.properties"
    config.write_text(f"listeners=http://127.0.0.1:{port}\n"
                      f"ferry.log=embedded:{tmp_path / 'log'}\n"
                      "kafkastore.topic=_custom_schemas\n"
                      "schema.compatibility.level=full\n"
                      "kafkastore.bootstrap.servers=PLAINTEXT://ignored:9092\n"
                      "some.unknown.setting=1\n")
    proc = _ferry("registry", "--config", str(config), cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_serving(proc, url)
        assert requests.get(url + "/config", timeout=30).json() == {"compatibilityLevel": "FULL"}
    finally:
        code, err = _stop(proc)
    assert code == 0, err
    assert "topic _custom_schemas" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--listen", "nonsense"], "--listen 'nonsense' is not of the form HOST:PORT"),
    (["--config", "missing.properties"], "missing.properties"),
    (["--log", "bogus://x"], "no backend for scheme 'bogus'"),
    (["--config", "bad.properties"], "kafkagroup.session.timeout.ms"),
    (["--config", "level.properties"], "schema.compatibility.level"),
])
def test_cli_mistakes_are_one_stderr_line(tmp_path: Path, args, message):
    (tmp_path / "bad.properties").write_text("kafkagroup.session.timeout.ms=soon\n")
    (tmp_path / "level.properties").write_text("schema.compatibility.level=sideways\n")
    proc = _ferry("registry", "--log", f"embedded:{tmp_path / 'log'}", "--listen",
                  f"127.0.0.1:{free_port()}", *args, cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ferry: error: ")
    assert message in lines[0]


def test_a_port_in_use_is_one_stderr_line(tmp_path: Path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _ferry("registry", "--log", f"embedded:{tmp_path / 'log'}", "--listen",
                      f"127.0.0.1:{port}", cwd=tmp_path)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ferry: error: "), lines


def test_an_unusable_topic_stops_the_command_with_an_error(tmp_path: Path):
    from core.backends import open_backend

    with open_backend(f"embedded:{tmp_path / 'log'}") as backend:
        backend.create_topic("_schemas", 2, {"cleanup.policy": "compact"})
    proc = _ferry("registry", "--log", f"embedded:{tmp_path / 'log'}", "--listen",
                  f"127.0.0.1:{free_port()}", cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.decode().strip().splitlines()[-1] == (
        "ferry: error: the schemas topic _schemas has 2 partitions; it must have exactly 1 "
        "(delete it or set kafkastore.topic to another topic)")


def test_help_lists_the_command():
    out = subprocess.run([sys.executable, "-m", "core.cli", "--help"], capture_output=True,
                         timeout=60, check=False)
    assert b"registry" in out.stdout
