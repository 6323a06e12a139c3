"""Subprocesses for the benchmarks: a Ferry broker, a Redis server, a py-spy profiler.

Each server binds 127.0.0.1 on a free port, keeps its data in a directory the caller owns,
writes its output to a log file next to that directory, and is a context manager: leaving
the ``with`` block stops it (SIGTERM, then SIGKILL after a bounded wait).
"""

from __future__ import annotations

import logging
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """One server subprocess; subclasses say how to build its command line."""

    name = "server"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.log_path = data_dir.parent / f"{data_dir.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.proc.pid

    def argv(self) -> list[str]:
        raise NotImplementedError

    def command_line(self) -> str:
        return shlex.join(self.argv())

    def start(self) -> None:
        """Start the process and return once its port accepts connections."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = self.argv()
        log.info("starting %s: %s", self.name, shlex.join(argv))
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         cwd=REPO_ROOT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} during "
                                   f"start-up; its output:\n{self.output()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    log.info("%s (pid %d) listens on %s", self.name, self.proc.pid, self.address)
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on {self.address} within "
                           f"{START_TIMEOUT_S:.0f} s; its output:\n{self.output()}")

    def output(self, tail: int = 5000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM, wait up to STOP_TIMEOUT_S, then SIGKILL."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("%s (pid %d) ignored SIGTERM for %.0f s; killing it",
                        self.name, proc.pid, STOP_TIMEOUT_S)
            proc.kill()
            proc.wait(10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class FerryBroker(ServerProcess):
    """``python -m core.cli broker`` with Kafka's default flush policy unless told otherwise.

    ``config`` becomes a ``.properties`` file passed with ``--config``; empty means every
    broker setting keeps its default (``log.flush.interval.messages`` unset: the log is
    left to the page cache, as in Kafka).
    """

    name = "ferry broker"

    def __init__(self, data_dir: Path, config: dict[str, str] | None = None, *,
                 metrics: bool = False) -> None:
        super().__init__(data_dir)
        self.config = dict(config or {})
        self.config_path = data_dir.parent / f"{data_dir.name}.properties"
        #: With ``metrics``, ``/metrics`` is served on this port (``--metrics``).
        self.metrics_port = free_port() if metrics else None

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "core.cli", "broker", "--data-dir", str(self.data_dir),
                "--listen", self.address]
        if self.config:
            argv += ["--config", str(self.config_path)]
        if self.metrics_port is not None:
            argv += ["--metrics", f"127.0.0.1:{self.metrics_port}"]
        return argv

    def start(self) -> None:
        if self.config:
            self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config.items()))
        super().start()


class RedisServer(ServerProcess):
    """``redis-server`` persisting through its append-only file only.

    AOF on with ``appendfsync`` as given (``everysec`` is Redis's default durable mode: each
    write reaches the AOF file before the reply, and a background thread fsyncs it once a
    second). RDB snapshots and automatic AOF rewrites are off so that no fork competes
    with the measured runs.
    """

    name = "redis-server"

    def __init__(self, data_dir: Path, appendfsync: str = "everysec") -> None:
        super().__init__(data_dir)
        self.appendfsync = appendfsync

    def argv(self) -> list[str]:
        return ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
                "--dir", str(self.data_dir), "--daemonize", "no", "--protected-mode", "no",
                "--appendonly", "yes", "--appendfsync", self.appendfsync,
                "--save", "", "--auto-aof-rewrite-percentage", "0", "--logfile", ""]


def require_executable(name: str, install: str) -> str:
    """The path of ``name`` on PATH, or an error saying how to install it (``install``)."""
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found on PATH; install it with: {install}")
    return path


@contextmanager
def py_spy(pid: int, out: Path | None) -> Iterator[None]:
    """Sample process ``pid`` with ``py-spy record`` into ``out`` (collapsed stacks, for
    flame graphs) while the block runs; do nothing if ``out`` is None."""
    if out is None:
        yield
        return
    spy = subprocess.Popen([require_executable("py-spy", "pip install py-spy"), "record", "--pid",
                            str(pid), "--format", "raw", "--rate", "250", "--nonblocking",
                            "--output", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(60)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait(10)
        log.info("py-spy profile of the broker: %s", out)
