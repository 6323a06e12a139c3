"""Helpers for the ``ferry`` CLI tests: run the real command as a subprocess, read its output."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import pytest

#: Generous: a command normally finishes in well under a second, but CI machines stall.
COMMAND_TIMEOUT_S = 30.0


class Ferry:
    """Runs ``python -m core.cli`` against one embedded data directory.

    ``run`` waits for the command (killing it on timeout); ``start`` returns a running
    process that the fixture kills at teardown if the test has not stopped it.
    """

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.data_dir = tmp_path / "data"
        self.log_url = f"embedded:{self.data_dir}"
        self._started: list[subprocess.Popen[bytes]] = []

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
        env.update(extra or {})
        return env

    def command(self, args: tuple[str, ...], log: bool) -> list[str]:
        prefix = ["--log", self.log_url] if log else []
        return [sys.executable, "-m", "core.cli", *prefix, *args]

    def run(self, *args: str, input: bytes = b"", log: bool = True,
            env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
        """Run ``ferry [--log URL] ARGS`` to completion with ``input`` on stdin."""
        return subprocess.run(
            self.command(args, log), input=input, capture_output=True, timeout=timeout,
            env=self.env(env), cwd=cwd or self.tmp_path, check=False,
        )

    def ok(self, *args: str, input: bytes = b"") -> bytes:
        """Run a command that must succeed; return its stdout."""
        result = self.run(*args, input=input)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        assert b"Traceback" not in result.stderr
        return result.stdout

    def start(self, *args: str, log: bool = True,
              stdout: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            self.command(args, log), stdin=subprocess.DEVNULL, stdout=stdout,
            stderr=subprocess.PIPE, env=self.env(), cwd=self.tmp_path,
        )
        self._started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self._started:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=COMMAND_TIMEOUT_S)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


class LineReader:
    """Reads a stream's lines on a thread, so a test can wait for them with a deadline."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._lines: queue.Queue[bytes] = queue.Queue()
        self.seen: list[bytes] = []
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self._lines.put(line)

    def read(self, count: int, timeout: float = COMMAND_TIMEOUT_S) -> list[bytes]:
        """The next ``count`` lines; fails if they do not arrive before the deadline."""
        deadline = time.monotonic() + timeout
        lines = []
        while len(lines) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"got {len(lines)} of {count} lines before the deadline: {lines}")
            try:
                lines.append(self._lines.get(timeout=remaining))
            except queue.Empty:
                continue
        self.seen.extend(lines)
        return lines

    def wait_for(self, text: bytes, timeout: float = COMMAND_TIMEOUT_S) -> bytes:
        """The first line containing ``text``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no line containing {text!r} before the deadline: {self.seen}")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line

    def rest(self, timeout: float = COMMAND_TIMEOUT_S) -> bytes:
        """Everything after the lines read so far, once the stream has closed."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the stream did not close"
        out = []
        while not self._lines.empty():
            out.append(self._lines.get_nowait())
        self.seen.extend(out)
        return b"".join(out)


def stop(proc: subprocess.Popen[bytes], signum: int = signal.SIGINT) -> int:
    """Send ``signum`` and wait for the exit code (killing the process on timeout)."""
    proc.send_signal(signum)
    try:
        return proc.wait(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=COMMAND_TIMEOUT_S)
        pytest.fail(f"the process ignored {signal.Signals(signum).name}")


def assert_one_error_line(result: subprocess.CompletedProcess[bytes], *fragments: str) -> str:
    """The command failed with exit 1 and exactly one ``ferry: error:`` line naming
    every fragment; returns that line."""
    stderr = result.stderr.decode(errors="replace")
    command = " ".join(str(a) for a in result.args[3:])  # after `python -m core.cli`
    assert result.returncode == 1, (command, result.returncode, stderr)
    lines = stderr.splitlines()
    assert len(lines) == 1, (command, stderr)
    assert lines[0].startswith("ferry: error: "), (command, stderr)
    for fragment in fragments:
        assert fragment in lines[0], (command, fragment, lines[0])
    return lines[0]
