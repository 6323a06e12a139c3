"""The data-directory lock: one process (and one LogManager) per data directory.

``DATA_DIR/.lock`` is held with ``flock(LOCK_EX | LOCK_NB)`` for as long as the directory is
open. The kernel drops a ``flock`` when its holder dies, even by SIGKILL, so a lock file left
behind by a dead process never blocks anyone: the file's content is only information. After
locking, the holder writes a JSON record about itself (pid, command line, start time and the
caller's ``owner`` mapping, e.g. ``{"command": "ferry broker", "listener": "127.0.0.1:9092"}``)
so that a second process can tell the user who holds the directory and, for a broker, how to
reach the same data through it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from core.log.errors import LogDirLockedError, StorageError

__all__ = ["LOCK_FILE_NAME", "DataDirLock", "describe_holder", "read_holder"]

log = logging.getLogger(__name__)

LOCK_FILE_NAME = ".lock"

# flock() conflicts between two descriptors of one process too, but the message would then
# blame our own pid; this set lets us say "already open in this process" instead.
# Guarded by _locked_guard; holds resolved (real) data-directory paths.
_locked_dirs: set[str] = set()
_locked_guard = threading.Lock()


class DataDirLock:
    """An exclusive hold on a data directory; release with ``release()`` or a ``with`` block.

    Lifecycle: 1. ``DataDirLock.acquire(data_dir, owner)`` creates the directory if needed,
    locks ``.lock`` and records the holder; 2. the caller uses the directory; 3. ``release()``
    (idempotent) clears the record and unlocks.

    The descriptor is close-on-exec, so processes this one starts do not inherit the lock.
    A child created by ``fork()`` without ``exec`` shares it, as ``flock`` locks follow the
    open file description.
    """

    def __init__(self, data_dir: Path, real_path: str, fd: int, holder: dict[str, object]):
        self.data_dir = data_dir
        self.holder = holder
        self._real_path = real_path
        self._fd: int | None = fd

    @property
    def path(self) -> Path:
        """The lock file."""
        return self.data_dir / LOCK_FILE_NAME

    @property
    def held(self) -> bool:
        return self._fd is not None

    @classmethod
    def acquire(
        cls, data_dir: Path | str, owner: Mapping[str, object] | None = None
    ) -> DataDirLock:
        """Lock ``data_dir`` (created if missing) for this process.

        Raises ``LogDirLockedError`` naming the holder if another process, or another
        LogManager of this process, holds it; ``StorageError`` if the directory cannot be
        created, is not a directory or is not writable.
        """
        data_dir = Path(data_dir)
        _ensure_directory(data_dir)
        real_path = os.path.realpath(data_dir)
        with _locked_guard:
            if real_path in _locked_dirs:
                raise LogDirLockedError(
                    f"data directory {data_dir} is already open in this process; share the "
                    "LogManager that opened it (the embedded backend does) or close it first",
                    holder=read_holder(data_dir),
                )
            fd = _open_lock_file(data_dir)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                holder = read_holder(data_dir)
                raise LogDirLockedError(describe_holder(data_dir, holder), holder=holder) from None
            except OSError as exc:
                os.close(fd)
                raise StorageError(f"cannot lock data directory {data_dir}: {exc}") from exc
            try:
                holder = _holder_record(owner)
                _write_record(fd, holder)
            except OSError as exc:
                os.close(fd)  # closing the descriptor also drops the flock
                raise StorageError(
                    f"cannot write the lock file {data_dir / LOCK_FILE_NAME}: {exc}"
                ) from exc
            _locked_dirs.add(real_path)
        log.debug("locked data directory %s", data_dir)
        return cls(data_dir, real_path, fd, holder)

    def release(self) -> None:
        """Clear the holder record and unlock. Safe to call more than once."""
        with _locked_guard:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                # Clear before unlocking, so the file never names a process that let go.
                os.ftruncate(fd, 0)
            except OSError as exc:
                log.warning("could not clear lock file %s: %s", self.path, exc)
            finally:
                os.close(fd)
                _locked_dirs.discard(self._real_path)
        log.debug("unlocked data directory %s", self.data_dir)

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "held" if self.held else "released"
        return f"DataDirLock({str(self.data_dir)!r}, {state})"


def read_holder(data_dir: Path | str) -> dict[str, object]:
    """What the current (or last) holder of ``data_dir`` recorded; ``{}`` if unreadable.

    The holder writes its record right after locking, so a reader racing with it can see an
    empty file; callers must treat every field as optional.
    """
    try:
        text = (Path(data_dir) / LOCK_FILE_NAME).read_text(encoding="utf-8")
        record = json.loads(text)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def describe_holder(data_dir: Path | str, holder: Mapping[str, object]) -> str:
    """The user-facing message for a directory held by the process ``holder`` describes."""
    pid = holder.get("pid")
    who = f"process {pid}" if pid is not None else "another process"
    command = holder.get("command") or holder.get("command_line")
    listener = holder.get("listener")
    details = [str(command)] if command else []
    if listener:
        details.append(f"listening on {listener}")
    if details:
        who += f" ({', '.join(details)})"
    message = f"data directory {data_dir} is in use by {who}"
    if listener:
        return f"{message}; use --log kafka://{listener} to reach it through the broker"
    return f"{message}; stop that process or use another data directory"


def _ensure_directory(data_dir: Path) -> None:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise StorageError(
            f"data directory {data_dir} exists but is not a directory; choose another path"
        ) from None
    except OSError as exc:
        raise StorageError(f"cannot create data directory {data_dir}: {exc}") from exc
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise StorageError(
            f"data directory {data_dir} is not writable by this user; fix its permissions "
            "or choose another path"
        )


def _open_lock_file(data_dir: Path) -> int:
    path = data_dir / LOCK_FILE_NAME
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise StorageError(f"cannot open the lock file {path}: {exc}") from exc


def _holder_record(owner: Mapping[str, object] | None) -> dict[str, object]:
    record: dict[str, object] = {
        "pid": os.getpid(),
        "command_line": " ".join([sys.executable, *sys.argv]),
        "started_ms": int(time.time() * 1000),
    }
    # The caller's words about itself ("command", "listener") take precedence.
    record.update(owner or {})
    return record


def _write_record(fd: int, record: Mapping[str, object]) -> None:
    # Rewritten in place: replacing the file by rename would give later openers a different
    # inode, and their flock() would then succeed while we still hold the old one.
    data = json.dumps(record, default=str, sort_keys=True).encode("utf-8") + b"\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)
