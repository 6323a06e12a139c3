"""Local servers started as subprocesses, shared by ``ferry demo`` and the test suite.

``free_port`` picks a free 127.0.0.1 port. ``PostgresServer`` is a throwaway PostgreSQL
cluster (``initdb`` in a temporary directory, ``wal_level=logical``); ``Child`` is any other
server: it runs in its own session, so ``stop()`` reaches the whole process group (a
``ferry pipeline`` and the JVM it forks, for instance) and nothing outlives it.

``initdb`` and ``postgres`` refuse to run as root, and CI runs as root: as root the server
runs as the ``postgres`` system user that Debian's ``postgresql`` package creates, in a
directory that user owns.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["PASSWORD", "Child", "PostgresServer", "PostgresUnavailable", "free_port",
           "server_bindir", "start_moto", "wait_listening"]

PASSWORD = "ferry-test"
START_TIMEOUT_S = 60.0

# Small and fast: a throwaway server does not survive an OS crash, and fsync=off keeps
# initdb and every commit cheap on two cores.
_SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "16",
    "max_wal_senders": "16",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "64MB",
    "max_connections": "100",
    "log_min_messages": "warning",
}


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


_handed_out: set[int] = set()
_rng = random.SystemRandom()
#: The lowest port ``free_port`` hands out: above the well-known and common service ports.
_LOWEST = 10000


def _own_slice(low: int, high: int) -> tuple[int, int]:
    """The part of ``[low, high)`` this process may hand out.

    Under pytest-xdist each worker (and every process it starts, which inherits its
    environment) gets its own slice, so two workers never pick the same port: the memory
    of handed-out ports is per process, and a port one worker picked may not be bound yet
    when another worker probes it. Elsewhere the whole range is ours."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    try:
        index = int(worker.removeprefix("gw"))
        count = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    except (KeyError, ValueError):
        return low, high
    if not 0 <= index < count:
        return low, high
    size = (high - low) // count
    return low + index * size, low + (index + 1) * size


def free_port() -> int:
    """A free 127.0.0.1 port for a server that binds it a moment later.

    Chosen below the kernel's ephemeral range, so that no client connection (which takes
    its local port from that range) can grab it between this call and the server's bind,
    never the same port twice in one process, and under pytest-xdist from this worker's
    own slice of that range. Falls back to the kernel's choice."""
    low, _ = _ephemeral_range()
    if low > _LOWEST + 1000:
        first, end = _own_slice(_LOWEST, low)
        for _ in range(200):
            port = _rng.randrange(first, end)
            if port in _handed_out:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _handed_out.add(port)
    return port


def wait_listening(port: int, alive: Callable[[], bool], what: str,
                   timeout: float = 30.0) -> None:
    """Return once 127.0.0.1:``port`` accepts connections; RuntimeError if ``alive()``
    turns false or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while True:
        if not alive():
            raise RuntimeError(f"{what} exited before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on {port} within "
                                   f"{timeout:.0f} s") from None
            time.sleep(0.1)


class Child:
    """A server subprocess in its own session, output appended to ``log_path``."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, *,
                 env: dict[str, str] | None = None, cwd: Path | None = None,
                 keep_stdin: bool = False) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        with open(log_path, "ab") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.PIPE if keep_stdin
                                         else subprocess.DEVNULL, env=env, cwd=cwd,
                                         start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self, tail: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM to the process group, SIGKILL to it after ``timeout`` seconds; the
        group is SIGKILLed in the end either way, so no grandchild survives."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.stdin is not None:
            self.proc.stdin.close()


def start_moto(log_path: Path, timeout: float = 30.0) -> tuple[Child, str]:
    """``moto_server`` (an S3 API, PyPI ``moto[server]``) on a free 127.0.0.1 port, once it
    listens: the process and its URL."""
    port = free_port()
    exe = shutil.which("moto_server")
    cmd = [exe] if exe else [sys.executable, "-m", "moto.server"]
    env = {**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"}
    child = Child("moto", [*cmd, "-H", "127.0.0.1", "-p", str(port)], log_path, env=env)
    try:
        wait_listening(port, child.alive, "moto_server", timeout)
    except RuntimeError:
        child.stop()
        raise
    return child, f"http://127.0.0.1:{port}"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries here (Debian: ``apt-get install postgresql``)."""


def server_bindir() -> Path:
    """The directory of ``initdb`` and ``postgres``, as ``pg_config --bindir`` reports it."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for bindir in candidates:
        if (bindir / "initdb").exists() and (bindir / "postgres").exists():
            return bindir
    raise PostgresUnavailable("no initdb/postgres found (install Debian's postgresql)")


class PostgresServer:
    """One PostgreSQL cluster on 127.0.0.1, a free port; ``start()`` runs it. Its
    superuser ``postgres`` has password ``PASSWORD`` (scram-sha-256 over TCP, replication
    allowed). ``restart()`` stops it (fast or immediate) and starts it again on the same
    port and data; ``kill()`` is ``SIGKILL`` of the postmaster."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.bindir = server_bindir()
        self.port = free_port()
        self.settings = {**_SETTINGS, **(settings or {})}
        self._as_root = os.geteuid() == 0
        self._user = pwd.getpwnam("postgres") if self._as_root else None
        # Not under a caller's private temporary directory: as root that is often 0700,
        # which the postgres user cannot enter.
        self.root = Path(tempfile.mkdtemp(prefix="ferry-pg-"))
        self.data_dir = self.root / "data"
        self.log_path = self.root / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        if self._user is not None:
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        self._initdb()

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def dsn(self, dbname: str = "postgres", user: str = "postgres",
            password: str = PASSWORD) -> str:
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={user} password={password}"

    def url(self, dbname: str = "postgres") -> str:
        """A SQLAlchemy URL (psycopg 3 driver) for ``dbname``."""
        return f"postgresql+psycopg://postgres:{PASSWORD}@127.0.0.1:{self.port}/{dbname}"

    def _run_as(self) -> dict[str, object]:
        if self._user is None:
            return {}
        return {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}

    def _initdb(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        if self._user is not None:
            os.chown(pwfile, self._user.pw_uid, self._user.pw_gid)
        out = subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(self.data_dir), "-U", "postgres",
             f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            capture_output=True, text=True, cwd=self.root, **self._run_as())
        pwfile.unlink()
        if out.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{out.stdout}\n{out.stderr}")
        # initdb's pg_hba.conf already allows replication from 127.0.0.1 with the host method.
        conf = "".join(f"{k} = '{v}'\n" for k, v in self.settings.items())
        with open(self.data_dir / "postgresql.conf", "a") as fh:
            fh.write(conf)

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        if self._user is not None:
            os.chown(self.log_path, self._user.pw_uid, self._user.pw_gid)
        self.proc = subprocess.Popen(
            [str(self.bindir / "postgres"), "-D", str(self.data_dir), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}"],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True,
            **self._run_as())
        log.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n{self.output()}")
            ready = subprocess.run(
                [str(self.bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)])
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"postgres did not start within {START_TIMEOUT_S} s:\n{self.output()}")

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def stop(self, mode: str = "fast", timeout: float = 30.0) -> None:
        """Stop as ``pg_ctl -m fast`` (SIGINT) or ``-m immediate`` (SIGQUIT) would."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGQUIT if mode == "immediate" else signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend at once, as a machine crash would."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def close(self) -> None:
        self.stop("immediate")
        # Backends still exiting after an immediate stop die with their group.
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
