"""A full disk for tests: makes chosen ``os`` writes of chosen files fail with ENOSPC.

A real full file system (a small tmpfs) cannot target one write site, such as the index
write that follows a successful log write, so the unit tests wrap the ``os`` functions the
storage engine calls. The integration test (tests/integration/broker/test_broker_disk_full.py)
uses a real tmpfs.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

import pytest

__all__ = ["DiskFaults", "Site"]


@dataclass(frozen=True)
class Site:
    """Which calls fail: ``op`` ('write', 'create' for os.open with O_CREAT, 'fsync') on
    files whose name ends with ``suffix`` ('' for any file)."""

    op: str
    suffix: str


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class DiskFaults:
    """Arm a site to fail from its ``after``-th call on (1 = the next call) until ``free()``.

    With ``short`` the first failing write writes half its bytes and returns, as a write
    that runs out of space part way does; the calls after it raise.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._site: Site | None = None
        self._countdown = 0
        self._short = False
        self.failures = 0
        real_write, real_open = os.write, os.open
        real_fsync, real_fdatasync = os.fsync, os.fdatasync

        def write(fd, data):
            if self._hit("write", _fd_path(fd)):
                if self._short and len(data) > 1:
                    self._short = False
                    return real_write(fd, bytes(data)[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device (injected)")
            return real_write(fd, data)

        def open_(path, flags, mode=0o777, *, dir_fd=None):
            if flags & os.O_CREAT and self._hit("create", os.fspath(path)):
                raise OSError(errno.ENOSPC, "No space left on device (injected)")
            return real_open(path, flags, mode, dir_fd=dir_fd)

        def fsync(fd):
            if self._hit("fsync", _fd_path(fd)):
                raise OSError(errno.EIO, "Input/output error (injected)")
            return real_fsync(fd)

        def fdatasync(fd):
            if self._hit("fsync", _fd_path(fd)):
                raise OSError(errno.EIO, "Input/output error (injected)")
            return real_fdatasync(fd)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "fdatasync", fdatasync)

    def arm(self, site: Site, *, after: int = 1, short: bool = False) -> None:
        self._site, self._countdown, self._short = site, after, short

    def free(self) -> None:
        self._site = None

    def _hit(self, op: str, path: str) -> bool:
        site = self._site
        if site is None or site.op != op or not path.endswith(site.suffix):
            return False
        if self._countdown > 1:
            self._countdown -= 1
            return False
        self.failures += 1
        return True
