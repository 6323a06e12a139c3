"""A partition's log start offset when DeleteRecords moved it inside a segment.

Kafka keeps the log start offset of every partition in ``log-start-offset-checkpoint``
because DeleteRecords can move it past the first segment's base offset (whole segments
below it are deleted, the rest of the first one stays on disk but is no longer served).
Ferry stores it per partition, as ``log-start-offset-checkpoint`` in the partition
directory (one decimal number), replaced atomically: temporary file, fsync, rename, fsync
of the directory, before the new start offset is answered. With no file, the log starts
at its first segment's base offset.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from core.log.errors import StorageError

__all__ = ["CHECKPOINT_NAME", "load_start_offset", "save_start_offset"]

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "log-start-offset-checkpoint"


def load_start_offset(directory: Path) -> int:
    """The stored start offset, or 0 if none is stored. An unreadable file is logged and
    ignored: the log then starts at its first segment, serving records DeleteRecords had
    hidden, which loses nothing."""
    path = directory / CHECKPOINT_NAME
    try:
        return max(0, int(path.read_text(encoding="ascii").strip()))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        log.warning("ignoring unreadable log start offset checkpoint %s: %s", path, exc)
        return 0


def save_start_offset(directory: Path, offset: int) -> None:
    """Durably store ``offset``; StorageError if it cannot be written."""
    path = directory / CHECKPOINT_NAME
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{offset}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StorageError(f"cannot store the log start offset of {directory}: {exc}") from exc
