"""A real ``ferry connect standalone`` subprocess on a free 127.0.0.1 REST port, for the
end-to-end Connect tests (crash recovery, connectors in the real worker).

The worker properties and connector configs are written as files once, so ``start()``
after ``kill()`` (SIGKILL) runs the same connectors again, resuming from what the worker
stored in its log. The worker's stdout and stderr go to ``worker.log`` in the work
directory; ``output()`` is its tail, for failure messages.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import requests
from broker_process import free_port

__all__ = ["ConnectProcess"]

REPO = Path(__file__).resolve().parents[1]


class ConnectProcess:
    """``ferry connect standalone --log <log>`` in ``workdir``.

    ``connectors`` maps a file stem to a connector's JSON (``{"name": ..., "config": ...}``);
    each becomes ``<workdir>/<stem>.json``, passed in that order. ``log`` defaults to
    ``embedded:<workdir>/data``. ``timeout`` bounds every wait, ``poll`` is the pause
    between checks and ``tail`` how many characters of the log ``output()`` returns.
    """

    def __init__(self, workdir: Path, worker_props: str,
                 connectors: Mapping[str, Mapping[str, Any]], *, log: str | None = None,
                 timeout: float = 30.0, poll: float = 0.05, tail: int = 5000) -> None:
        self.tmp = workdir
        self.data = workdir / "data"
        self.log = log or f"embedded:{self.data}"
        self.timeout, self.poll, self.tail = timeout, poll, tail
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        (workdir / "worker.properties").write_text(worker_props)
        self.files = []
        for stem, connector in connectors.items():
            path = workdir / f"{stem}.json"
            path.write_text(json.dumps(connector))
            self.files.append(str(path))

    def start(self, wait: bool = True) -> None:
        """Start the worker; unless ``wait`` is false, until GET /health answers 200."""
        env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        with open(self.tmp / "worker.log", "ab") as log:  # the child keeps its own fd
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "core.cli", "connect", "standalone",
                 "--log", self.log, "--rest", f"127.0.0.1:{self.port}",
                 str(self.tmp / "worker.properties"), *self.files],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp)
        if wait:
            self.wait(self.healthy, "GET /health to answer 200")

    def healthy(self) -> bool:
        try:
            return requests.get(self.base + "/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def get(self, path: str) -> Any:
        """The JSON body of GET ``path``, or None if the worker does not answer 200."""
        try:
            response = requests.get(self.base + path, timeout=5)
        except requests.RequestException:
            return None
        try:
            return response.json() if response.status_code == 200 else None
        except ValueError:
            return None

    def wait(self, cond: Callable[[], Any], what: str, timeout: float | None = None) -> Any:
        """``cond()``'s first truthy result; fails the test (with the log's tail) if the
        worker exits or ``timeout`` passes first."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                pytest.fail(f"worker exited ({self.proc.returncode}) waiting for {what}:\n"
                            f"{self.output()}")
            result = cond()
            if result:
                return result
            time.sleep(self.poll)
        pytest.fail(f"timed out waiting for {what}:\n{self.output()}")

    def output(self) -> str:
        return (self.tmp / "worker.log").read_text(errors="replace")[-self.tail:]

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(self.timeout)

    def stop(self) -> int | None:
        """SIGTERM (SIGKILL if it does not exit in time); the exit code, None if never
        started."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(self.timeout)
        return self.proc.returncode
