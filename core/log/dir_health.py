"""Whether a data directory takes writes: offline after a failed write, probed until it works.

Kafka hands every ``IOException`` of a log directory to its ``LogDirFailureChannel``; the
``ReplicaManager`` then takes the directory's partitions offline (produce and fetch answer
KAFKA_STORAGE_ERROR) and, when no directory is left, halts the broker, so an operator frees
space and restarts it. A Ferry node has one data directory and no replica to fail over to,
so it keeps serving what it stored and stops only writing: after a failed write every
append, topic creation and offset commit fails at once with ``LogDirOfflineError``
(KAFKA_STORAGE_ERROR, which clients retry). Every append that failed was rolled back
whole, so the directory holds exactly what was acknowledged. While offline, a write asks
for a probe at most every ``probe_interval_s``: a small file is written, fsynced and
removed; when that works the directory is writable again and appends resume on their own.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.log.errors import LogDirOfflineError

__all__ = ["PROBE_FILE", "LogDirHealth"]

log = logging.getLogger(__name__)

PROBE_FILE = ".ferry-write-probe"
_PROBE_BYTES = 64 * 1024  # room for a typical batch and its index entries


class LogDirHealth:
    """Online/offline state of one data directory; thread-safe.

    Writers call ``check_writable()`` before a write and ``failed()`` after an ``OSError``.
    ``clock`` is monotonic seconds (tests pass their own).
    """

    def __init__(self, directory: Path, *, probe_interval_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = Path(directory)
        self.probe_interval_s = probe_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._reason: str | None = None  # guarded by _lock; None while online
        self._next_probe = 0.0
        self.failures = 0  # how many times the directory went offline

    @property
    def online(self) -> bool:
        return self._reason is None

    @property
    def reason(self) -> str | None:
        """Why the directory is offline (None while online)."""
        return self._reason

    def failed(self, what: str, exc: BaseException) -> None:
        """A write to the directory failed: take it offline (logged once per episode)."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = f"{what}: {exc}"
            self._next_probe = self._clock() + self.probe_interval_s
            self.failures += 1
        log.error("data directory %s is offline for writes: %s failed (%s). Appends, topic "
                  "creation and offset commits answer KAFKA_STORAGE_ERROR until a test write "
                  "succeeds (tried every %.1f s); free space on the file system to resume",
                  self.directory, what, exc, self.probe_interval_s)

    def check_writable(self) -> None:
        """Return if writes may be tried; LogDirOfflineError if the directory is offline and
        a probe (when one is due) still fails."""
        reason = self._reason
        if reason is None or self._probe():
            return
        raise LogDirOfflineError(
            f"data directory {self.directory} is offline for writes since {reason}; free "
            f"space or fix the file system: writes resume once a test write succeeds "
            f"(tried every {self.probe_interval_s:g} s)")

    def _probe(self) -> bool:
        """Try a test write if one is due; True if the directory is writable again."""
        now = self._clock()
        with self._lock:
            if self._reason is None:
                return True
            if now < self._next_probe:
                return False
            self._next_probe = now + self.probe_interval_s
        path = self.directory / PROBE_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                if os.write(fd, bytes(_PROBE_BYTES)) != _PROBE_BYTES:
                    raise OSError(errno.ENOSPC, "short write")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            log.debug("data directory %s is still not writable: %s", self.directory, exc)
            return False
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
        with self._lock:
            reason, self._reason = self._reason, None
        if reason is not None:
            log.warning("data directory %s is writable again (offline since %s); writes "
                        "resume", self.directory, reason)
        return True
