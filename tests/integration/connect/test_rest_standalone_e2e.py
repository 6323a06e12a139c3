"""``ferry connect standalone`` as a subprocess: REST up, a file source connector created
at startup and one via REST, status checked, deleted, clean exit 0 on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from broker_process import free_port

pytestmark = pytest.mark.integration

SOURCE = "connectors.file.source_connector:FileStreamSourceConnector"
DEADLINE_S = 30.0


def _call(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _wait_until(predicate, proc: subprocess.Popen[bytes], what: str,
                detail=lambda: "") -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"worker exited ({proc.returncode}) while waiting for {what}: "
                        f"{proc.stderr.read().decode(errors='replace')}")
        result = predicate()
        if result:
            return result
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}; {detail()}")


def _up(base: str) -> bool:
    try:
        return _call(base, "GET", "/health")[0] == 200
    except OSError:
        return False


@pytest.fixture
def worker(tmp_path: Path):
    port = free_port()
    (tmp_path / "in.txt").write_text("a\nb\n")
    (tmp_path / "worker.properties").write_text(
        "key.converter=StringConverter\nvalue.converter=StringConverter\n"
        "offset.flush.interval.ms=200\n")
    (tmp_path / "boot.json").write_text(json.dumps({"name": "boot", "config": {
        "connector.class": SOURCE, "tasks.max": "1", "topic": "boot-topic",
        "file": str(tmp_path / "in.txt")}}))
    env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "--log", f"embedded:{tmp_path / 'data'}",
         "connect", "standalone", "--rest", f"127.0.0.1:{port}",
         str(tmp_path / "worker.properties"), str(tmp_path / "boot.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        yield proc, f"http://127.0.0.1:{port}", tmp_path
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=DEADLINE_S)
        proc.stderr.close()


def test_standalone_worker_serves_rest_and_stops_on_sigterm(worker):
    proc, base, tmp_path = worker
    _wait_until(lambda: _up(base), proc, "GET /health to answer 200")
    assert _call(base, "GET", "/connectors")[1] == ["boot"]
    status, info = _call(base, "POST", "/connectors", {"name": "fs", "config": {
        "connector.class": SOURCE, "tasks.max": "1", "topic": "fs-topic",
        "file": str(tmp_path / "in.txt")}})
    assert status == 201, info
    assert info["name"] == "fs" and info["type"] == "source"

    last: list[Any] = []

    def running() -> dict[str, Any] | None:
        code, body = _call(base, "GET", "/connectors/fs/status")
        last[:] = [code, body]
        ok = (code == 200 and body["connector"]["state"] == "RUNNING" and body["tasks"]
              and body["tasks"][0]["state"] == "RUNNING")
        return body if ok else None

    status_body = _wait_until(running, proc, "connector fs to be RUNNING",
                              lambda: f"last status: {last}")
    assert status_body["tasks"][0]["worker_id"] == base.removeprefix("http://")
    assert _call(base, "POST", "/connectors", {"name": "fs", "config": {
        "connector.class": SOURCE, "tasks.max": "1", "topic": "t",
        "file": "x"}})[0] == 409
    bad_status, bad = _call(base, "POST", "/connectors", {"name": "bad", "config": {
        "connector.class": "NoSuchConnector"}})
    assert bad_status == 400 and bad["error_code"] == 400
    assert "connector.class" in bad["message"]
    assert _call(base, "DELETE", "/connectors/fs")[0] == 204
    assert _call(base, "GET", "/connectors/fs")[0] == 404
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=DEADLINE_S) == 0
    stderr = proc.stderr.read()
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")


def test_bad_worker_config_is_one_error_line(tmp_path: Path):
    (tmp_path / "worker.properties").write_text("offset.flush.interval.ms=soon\n")
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", "--log", f"embedded:{tmp_path / 'data'}",
         "connect", "standalone", str(tmp_path / "worker.properties")],
        capture_output=True, timeout=DEADLINE_S, cwd=tmp_path, check=False)
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ferry: error: worker config")
    assert "offset.flush.interval.ms" in lines[0]


def test_connector_file_without_name_is_an_error(tmp_path: Path):
    (tmp_path / "worker.properties").write_text("")
    (tmp_path / "c.properties").write_text(f"connector.class={SOURCE}\n")
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", "--log", f"embedded:{tmp_path / 'data'}",
         "connect", "standalone", str(tmp_path / "worker.properties"),
         str(tmp_path / "c.properties")],
        capture_output=True, timeout=DEADLINE_S, cwd=tmp_path, check=False)
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        f"ferry: error: connector config {tmp_path / 'c.properties'} has no name")
