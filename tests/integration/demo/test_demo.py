"""``ferry demo`` as a user runs it, a real subprocess: ``--check`` end to end (every change
made in PostgreSQL reaches S3, the index and the reporting table), Ctrl-C leaving no process
behind, and a missing prerequisite named in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.cli.demo.cli import missing_prerequisites

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[3]
#: Bounds for a loaded two-core machine: startup (a JVM among a dozen processes), the
#: check's load and settle time, shutdown.
RUN_TIMEOUT_S = 420.0
STOP_TIMEOUT_S = 90.0


def _needs_everything() -> None:
    missing = missing_prerequisites()
    if missing:  # tests/run installs them all, so CI runs these tests
        pytest.skip("; ".join(missing))


def _as_from_a_terminal() -> None:
    """Ctrl-C reaches the demo as from a terminal even when the test run itself ignores
    SIGINT (bash ignores it in a command started with ``&`` without job control)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ferry(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen[str]:
    base = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
    return subprocess.Popen([sys.executable, "-m", "core.cli", *args], cwd=REPO,
                            env={**base, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_as_from_a_terminal, **kw)


def _demo_check(tmp_path: Path, *args: str) -> tuple[int, str]:
    """``ferry demo --check`` with ``args``, to its end (SIGINT if it outlives the
    timeout): its exit code and output."""
    proc = _ferry("demo", "--check", *args, "--workdir", str(tmp_path / "demo"))
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=STOP_TIMEOUT_S)
    return proc.returncode, out


def test_demo_check_passes_end_to_end(tmp_path: Path) -> None:
    _needs_everything()
    code, out = _demo_check(tmp_path, "--duration", "15", "--settle", "180", "--rate", "8")
    assert code == 0, out[-6000:]
    summary = [line for line in out.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert [line.split()[:2] for line in summary] == [
        ["PASS", "s3"], ["PASS", "index"], ["PASS", "reporting"], ["PASS", "replicas"]
    ], out[-3000:]
    assert "(3 nodes)" in out  # the default: a cluster, as the compose stack runs
    assert "every partition on 3 brokers, all in sync" in out
    assert "ferry demo --check: passed" in out


def test_demo_check_fails_when_changes_do_not_arrive(tmp_path: Path) -> None:
    """The check can fail: with an S3 sink that leaves one table's topic out, S3 misses
    that table's changes, the check says which, and the exit code is 1. (The other two
    destinations may still be catching up when the short settle time ends: this test
    waits only for the S3 verdict, which cannot change.)"""
    _needs_everything()
    files = tmp_path / "connectors"
    files.mkdir()
    for path in (REPO / "docker" / "connectors").glob("*.json"):
        connector = json.loads(path.read_text())
        if connector["name"] == "s3-raw-changes":
            connector["config"]["topics"] = "shop.public.customers,shop.public.orders"
        (files / path.name).write_text(json.dumps(connector))
    code, out = _demo_check(tmp_path, "--duration", "5", "--settle", "20", "--connectors",
                            str(files))
    assert code == 1, out[-6000:]
    summary = {line.split()[1]: line for line in out.splitlines()
               if line.startswith(("PASS", "FAIL"))}
    assert summary["s3"].startswith("FAIL") and "('products', 'r', 1)" in summary["s3"], out
    assert set(summary) == {"s3", "index", "reporting", "replicas"}
    assert "ferry demo --check: FAILED" in out


def _descendants(root: int) -> set[int]:
    """Every live process below ``root`` (children of children included)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ctrl_c_stops_every_process_the_demo_started(tmp_path: Path) -> None:
    _needs_everything()
    proc = _ferry("demo", "--workdir", str(tmp_path / "demo"))
    lines: list[str] = []
    running = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.strip().startswith("load "):
                running.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert running.wait(RUN_TIMEOUT_S), "".join(lines)[-4000:]
        started = _descendants(proc.pid)
        # brokers, registry, 2 workers, moto, osmem, the pipeline (and its JVM), postgres
        assert len(started) >= 9, started
        proc.send_signal(signal.SIGINT)
        assert proc.wait(STOP_TIMEOUT_S) == 130, "".join(lines)[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.2)  # orphans being reaped by init
    survivors = {p: Path(f"/proc/{p}/cmdline").read_bytes()[:200]
                 for p in started if _alive(p)}
    assert survivors == {}
    reader.join(10)
    assert "stopped" in "".join(lines)


def test_a_missing_prerequisite_is_named_in_one_line_with_how_to_install_it(
        tmp_path: Path) -> None:
    # No java on an empty PATH and no JAVA_HOME; the interpreter runs by its full path.
    env = {"PATH": str(tmp_path), "JAVA_HOME": ""}
    proc = _ferry("demo", "--check", env=env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    java = [line for line in out.splitlines() if "java" in line]
    assert len(java) == 1 and "apt-get install openjdk-17-jre-headless" in java[0], out
    assert "Traceback" not in out
