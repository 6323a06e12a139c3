"""A simulated power cut for a ``ferry broker`` subprocess: what was not fsynced is lost.

Run as the broker's launcher (``python tests/power_cut.py JOURNAL broker ARGS...``), this
module wraps ``os.fsync``/``os.fdatasync`` in the broker process so that, after each one
returns, the synced file's path and the size it had when the sync began are appended to
``JOURNAL``. After the test kills the broker with SIGKILL, ``drop_unsynced`` cuts every
segment file (``.log``, ``.index``, ``.timeindex`` of a partition directory) back to the
size of its last fsync, or to nothing if it was never fsynced: the page cache of a machine
that lost power. (A SIGKILL alone loses nothing: the kernel still holds every write.)

Files other than segments (topic metadata, producer ids, the lock) are left as they are:
they are written with fsync before rename, and what this simulates is the log's
durability. Renamed-but-not-synced directory entries are not modelled either.
"""

from __future__ import annotations

import os
import runpy
import stat
import sys
import threading
from pathlib import Path

__all__ = ["drop_unsynced", "launcher"]

_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


def launcher(journal: Path) -> list[str]:
    """The command prefix that runs ``core.cli`` with fsyncs recorded in ``journal``."""
    return [sys.executable, str(Path(__file__).resolve()), str(journal)]


def _install(journal: Path) -> None:
    lock = threading.Lock()
    out = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def recording(real):
        def sync(fd: int) -> None:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return real(fd)
            path = os.readlink(f"/proc/self/fd/{fd}")
            real(fd)
            with lock:  # one write per line: a SIGKILL leaves whole lines, or a torn last one
                os.write(out, f"{path}\t{info.st_size}\n".encode())
            return None
        return sync

    os.fsync = recording(real_fsync)
    os.fdatasync = recording(real_fdatasync)


def drop_unsynced(data_dir: Path, journal: Path) -> dict[str, int]:
    """Cut the segment files under ``data_dir`` to their last fsynced size; return the
    bytes dropped per file (only files that lost something)."""
    synced: dict[str, int] = {}
    if journal.exists():
        for line in journal.read_text().splitlines():
            path, _, size = line.rpartition("\t")
            if path and size.isdigit():
                synced[path] = int(size)
    dropped = {}
    for path in data_dir.rglob("*"):
        if not path.is_file() or not path.name.endswith(_SEGMENT_SUFFIXES):
            continue
        size = path.stat().st_size
        keep = min(size, synced.get(str(path.resolve()), 0))
        if keep < size:
            os.truncate(path, keep)
            dropped[str(path.relative_to(data_dir))] = size - keep
    return dropped


if __name__ == "__main__":
    _install(Path(sys.argv[1]))
    sys.argv = ["ferry", *sys.argv[2:]]
    runpy.run_module("core.cli", run_name="__main__", alter_sys=True)
