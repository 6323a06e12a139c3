"""A Connect cluster of ``ferry connect distributed`` subprocesses on a ``ferry broker``
subprocess, for the distributed-mode integration tests (imported by name: pytest puts
this directory on ``sys.path``; not a test file).

``Cluster`` starts, kills (SIGKILL) and restarts workers on fixed REST ports, so a
restarted worker keeps its id, and talks to them over REST with bounded waits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from broker_process import BrokerProcess, free_port

__all__ = ["REPO", "Cluster", "WorkerProcess", "wait_for"]

REPO = Path(__file__).resolve().parents[3]
#: Bounded waits: generous for a loaded two-core machine, never a fixed sleep.
WAIT_S = 45.0
HTTP_TIMEOUT_S = 20.0


def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT_S,
             detail: Callable[[], Any] = lambda: "") -> Any:
    """Poll ``cond`` until it returns something truthy (returned); fail after ``timeout``.
    A ``requests`` error counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = cond()
        except requests.RequestException:
            result = None
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                 f"{detail()}")
        time.sleep(0.1)


class WorkerProcess:
    """One ``ferry connect distributed`` subprocess on a fixed REST port."""

    def __init__(self, tmp: Path, name: str, log_url: str, group: str,
                 config_file: Path) -> None:
        self.name = name
        self.port = free_port()
        self.worker_id = f"127.0.0.1:{self.port}"
        self.base = f"http://{self.worker_id}"
        self.log_path = tmp / f"{name}.log"
        self._argv = [sys.executable, "-m", "core.cli", "connect", "distributed",
                      "--log", log_url, "--group-id", group,
                      "--rest", self.worker_id, "--config", str(config_file)]
        self._cwd = tmp
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self._argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, cwd=self._cwd)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthy(self) -> bool:
        try:
            return requests.get(self.base + "/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def kill(self) -> None:
        """SIGKILL: no leave, no offset commit, no status write."""
        if self.alive:
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if not self.alive:
            return
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)

    def output(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""


class Cluster:
    """A broker and ``n`` workers in group ``group``; ``close()`` stops them all."""

    def __init__(self, tmp: Path, n: int, worker_props: dict[str, str],
                 group: str = "dist-test") -> None:
        self.tmp = tmp
        self.broker = BrokerProcess(tmp / "broker-data", {
            "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "4",
            "num.partitions": "1"}, tmp / "broker.log")
        self.config_file = tmp / "worker.properties"
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in worker_props.items()))
        self.group = group
        self.n = n
        self.workers: list[WorkerProcess] = []

    def start(self) -> None:
        self.broker.start()
        log_url = f"kafka://{self.broker.bootstrap}"
        self.workers = [WorkerProcess(self.tmp, f"worker{i}", log_url, self.group,
                                      self.config_file) for i in range(self.n)]
        for w in self.workers:
            w.start()
        for w in self.workers:
            self.wait_healthy(w)

    def wait_healthy(self, worker: WorkerProcess) -> None:
        def check() -> bool:
            if not worker.alive:
                raise AssertionError(f"{worker.name} exited:\n{worker.output()}")
            return worker.healthy()
        wait_for(check, f"{worker.name} to be healthy", detail=worker.output)

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.broker.stop()

    def by_id(self, worker_id: str) -> WorkerProcess:
        return next(w for w in self.workers if w.worker_id == worker_id)

    def alive(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.alive]

    def logs(self) -> str:
        return "\n".join(f"--- {w.name} ({w.worker_id}):\n{w.output(3000)}"
                         for w in self.workers)

    # ------------------------------------------------------------------ REST

    def call(self, worker: WorkerProcess, method: str, path: str,
             body: Any = None) -> requests.Response:
        return requests.request(method, worker.base + path, json=body,
                                timeout=HTTP_TIMEOUT_S)

    def call_until(self, worker: WorkerProcess, method: str, path: str, body: Any = None,
                   ok: tuple[int, ...] = (200, 201, 202, 204),
                   timeout: float = WAIT_S) -> requests.Response:
        """Retry while the answer is a 409 (rebalance) or the worker is unreachable."""
        last: list[str] = []

        def attempt() -> requests.Response | None:
            response = self.call(worker, method, path, body)
            last[:] = [f"{response.status_code} {response.text[:300]}"]
            if response.status_code in ok:
                return response
            if response.status_code != 409:
                raise AssertionError(f"{method} {path} on {worker.name}: {last[0]}")
            return None

        result: requests.Response = wait_for(attempt, f"{method} {path} on {worker.name}",
                                             timeout, lambda: last)
        return result

    def status(self, worker: WorkerProcess, name: str) -> dict[str, Any] | None:
        response = self.call(worker, "GET", f"/connectors/{name}/status")
        return response.json() if response.status_code == 200 else None

    def running(self, worker: WorkerProcess, name: str, tasks: int,
                not_on: str | None = None) -> dict[str, Any] | None:
        """The connector's status if it and its ``tasks`` tasks are RUNNING (none of them
        on worker id ``not_on``)."""
        status = self.status(worker, name)
        if status is None or len(status["tasks"]) != tasks:
            return None
        states = [status["connector"], *status["tasks"]]
        if all(s["state"] == "RUNNING" and s["worker_id"] != not_on for s in states):
            return status
        return None
