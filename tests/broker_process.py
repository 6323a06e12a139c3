"""A real ``ferry broker`` subprocess on a free 127.0.0.1 port, for tests of Kafka clients.

Shared by the broker tests' fixtures (``tests/integration/broker/conftest.py``), the
LogBackend contract suite's ``kafka`` harness and the kafka backend's integration tests.
``restart()`` stops the broker gently and starts it again on the same port and data
directory; ``kill()`` sends SIGKILL.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from core.cli.demo.processes import free_port, wait_listening

__all__ = ["START_TIMEOUT_S", "BrokerProcess", "free_port"]

START_TIMEOUT_S = 30.0


class BrokerProcess:
    def __init__(self, data_dir: Path, config: dict[str, str], log_path: Path, *,
                 launcher: list[str] | None = None, open_files: int | None = None,
                 extra_args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        # What runs ``core.cli``: a test may wrap it (tests/power_cut.py records fsyncs).
        self.launcher = launcher or [sys.executable, "-m", "core.cli"]
        self.config = config
        self.extra_args = list(extra_args or [])  # more ``ferry broker`` flags
        self.open_files = open_files  # the broker's RLIMIT_NOFILE (soft and hard), if given
        self.port = free_port()
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        config_file = self.data_dir.parent / f"broker-{self.port}.properties"
        config_file.write_text("".join(f"{k}={v}\n" for k, v in self.config.items()))
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [*self.launcher, "broker", "--data-dir", str(self.data_dir),
             "--listen", self.bootstrap, "--config", str(config_file), *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=self._limit_open_files if self.open_files else None)
        log.close()
        proc = self.proc
        try:
            wait_listening(self.port, lambda: proc.poll() is None, "broker", START_TIMEOUT_S)
        except RuntimeError as exc:
            self.kill()
            raise RuntimeError(f"{exc} (exit code {proc.returncode}):\n{self.output()}") from None

    def _limit_open_files(self) -> None:  # in the child, before exec
        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def restart(self) -> None:
        self.stop()
        self.start()
