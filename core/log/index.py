"""Sparse offset and time indexes of one segment: in-memory arrays, appended to Kafka-format files.

On disk, as Kafka lays them out (big-endian):

* ``.index``: entries of (relative offset int32, file position int32); an entry points at
  the start of a batch whose base offset is ``segment base + relative offset``.
* ``.timeindex``: entries of (timestamp int64, relative offset int32); timestamps strictly
  increase. An entry (T, R) means every batch stored before the batch containing
  ``base + R`` has a max timestamp of at most T.

Memory layout: two parallel ``array`` objects per index. The writer appends the payload
array before the key array, so a lock-free reader that finds entry ``i`` by bisecting the
key array always finds entry ``i`` in the payload array too (each append is atomic under
the GIL). Indexes of sealed segments are read from disk lazily, on the first lookup.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import struct
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

__all__ = ["OffsetIndex", "TimeIndex"]

log = logging.getLogger(__name__)

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_LITTLE_ENDIAN = sys.byteorder == "little"


class _IndexFile:
    """An index file: the fd used for appends, lazy loading, rename, flush and close."""

    entry_size = 0

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self._fd: int | None = None  # opened on the first write: sealed indexes are read-only
        self._file_size = 0  # bytes in the file while _fd is open (writes only append)
        self._dirty = False
        self._load_lock = threading.Lock()
        self._loaded = create
        if create:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)

    def _open_for_writes(self) -> int:
        if self._fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                self._file_size = os.fstat(fd).st_size
            except OSError:
                os.close(fd)
                raise
            self._fd = fd
        return self._fd
    # ------------------------------------------------------------------ file state

    def file_entries(self) -> int | None:
        """Entries the file holds, or None if it is missing or not a whole number of entries."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size % self.entry_size:
            return None
        return size // self.entry_size

    def _read_file(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def read_last_raw(self) -> bytes | None:
        """The last entry's bytes from disk, None if the file is missing, empty or ragged."""
        n = self.file_entries()
        if not n:
            return None
        with open(self.path, "rb") as f:
            f.seek((n - 1) * self.entry_size)
            return f.read(self.entry_size)

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._load_lock:
            if not self._loaded:
                data = self._read_file()
                usable = len(data) - len(data) % self.entry_size
                self._load(data[:usable])
                self._loaded = True

    def _load(self, data: bytes) -> None:
        raise NotImplementedError  # each index parses its own entry layout

    def _write_entry(self, raw: bytes) -> None:
        """Append one entry to the file; OSError leaves the file as it was (a torn entry
        is cut off, so the file stays a whole number of entries)."""
        fd = self._open_for_writes()
        size = self._file_size
        self._dirty = True
        try:
            if os.write(fd, raw) != len(raw):
                raise OSError(errno.ENOSPC, f"short write to {self.path}")
        except OSError:
            os.ftruncate(fd, size)
            raise
        self._file_size = size + len(raw)

    def _rewrite_file(self, raw: bytes) -> None:
        """Replace the file's content with ``raw`` (used when an index is rebuilt)."""
        fd = self._open_for_writes()
        os.ftruncate(fd, 0)
        self._file_size = 0
        if raw:
            if os.write(fd, raw) != len(raw):
                raise OSError(errno.ENOSPC, f"short write to {self.path}")
            self._file_size = len(raw)
        self._dirty = True

    # ------------------------------------------------------------------ rolling back

    def mark(self) -> tuple[int, int]:
        """Where the index stands (file size, entries in memory), for ``reset``. Opens the
        file for writes: only the active segment, which is about to be appended to, asks."""
        self._ensure_loaded()
        self._open_for_writes()
        return self._file_size, self._entries_in_memory()

    def reset(self, mark: tuple[int, int]) -> None:
        """Forget the entries appended since ``mark`` (memory and file), after a failed append.

        Raises OSError if the file cannot be cut back.
        """
        file_size, entries = mark
        self._truncate_memory(entries)
        if self._fd is not None and self._file_size != file_size:
            os.ftruncate(self._fd, file_size)
            self._file_size = file_size

    def _entries_in_memory(self) -> int:
        raise NotImplementedError

    def _truncate_memory(self, entries: int) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        if self._fd is not None and self._dirty:
            self._dirty = False
            os.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def rename(self, path: Path) -> None:
        """Rename the file (if it exists); an open fd keeps working across the rename."""
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, path)
        self.path = path

    def unlink(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _ints(data: bytes, typecode: str) -> array:
    values = array(typecode)
    values.frombytes(data)
    if _LITTLE_ENDIAN:
        values.byteswap()
    return values


class OffsetIndex(_IndexFile):
    """Relative offset -> position of the batch starting there, every index.interval.bytes."""

    entry_size = _OFFSET_ENTRY.size

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self._offsets = array("i")  # relative base offsets, strictly increasing
        self._positions = array("i")  # file positions, strictly increasing
        super().__init__(path, create=create)

    def _load(self, data: bytes) -> None:
        both = _ints(data, "i")
        self._positions = both[1::2]
        self._offsets = both[0::2]

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._offsets)

    def _entries_in_memory(self) -> int:
        return len(self._offsets)

    def _truncate_memory(self, entries: int) -> None:
        del self._offsets[entries:]  # keys first: a lock-free reader bisects them
        del self._positions[entries:]

    def append(self, relative_offset: int, position: int) -> None:
        """Add an entry; the caller guarantees both values grow."""
        self._write_entry(_OFFSET_ENTRY.pack(relative_offset, position))
        self._positions.append(position)
        self._offsets.append(relative_offset)

    def lookup(self, relative_offset: int) -> int:
        """Position of the last indexed batch whose base is at or before ``relative_offset``."""
        self._ensure_loaded()
        i = bisect_right(self._offsets, relative_offset) - 1
        positions = self._positions
        # i may name an entry a failed append just rolled back: 0 means "walk from the start"
        return positions[i] if 0 <= i < len(positions) else 0

    def last_entry(self) -> tuple[int, int] | None:
        """(relative offset, position) of the last entry, read from disk if not loaded."""
        if self._loaded:
            return (self._offsets[-1], self._positions[-1]) if self._offsets else None
        raw = self.read_last_raw()
        return _OFFSET_ENTRY.unpack(raw) if raw else None

    def rebuild(self, entries: list[tuple[int, int]]) -> None:
        """Replace every entry (memory and file) with ``entries``."""
        self._rewrite_file(b"".join(_OFFSET_ENTRY.pack(o, p) for o, p in entries))
        self._positions = array("i", [p for _, p in entries])
        self._offsets = array("i", [o for o, _ in entries])
        self._loaded = True


class TimeIndex(_IndexFile):
    """Max timestamp so far -> relative offset of the batch where it was first reached."""

    entry_size = _TIME_ENTRY.size

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self._timestamps = array("q")  # strictly increasing
        self._offsets = array("i")
        super().__init__(path, create=create)

    def _load(self, data: bytes) -> None:
        n = len(data) // self.entry_size
        fields = struct.unpack(">" + "qi" * n, data) if n else ()
        self._offsets = array("i", fields[1::2])
        self._timestamps = array("q", fields[0::2])

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._timestamps)

    def _entries_in_memory(self) -> int:
        return len(self._timestamps)

    def _truncate_memory(self, entries: int) -> None:
        del self._timestamps[entries:]  # keys first: a lock-free reader bisects them
        del self._offsets[entries:]

    def maybe_append(self, timestamp: int, relative_offset: int) -> bool:
        """Add an entry if ``timestamp`` is above the last one (Kafka keeps them increasing)."""
        self._ensure_loaded()
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return False
        self._write_entry(_TIME_ENTRY.pack(timestamp, relative_offset))
        self._offsets.append(relative_offset)
        self._timestamps.append(timestamp)
        return True

    def lookup_before(self, timestamp: int) -> int | None:
        """Relative offset of the last entry with a timestamp below ``timestamp``, if any.

        By the entry invariant, no batch before the one containing that offset can hold a
        record with a timestamp at or above ``timestamp``.
        """
        self._ensure_loaded()
        i = bisect_left(self._timestamps, timestamp) - 1
        offsets = self._offsets
        # i may name an entry a failed append just rolled back: no entry, scan from the start
        return offsets[i] if 0 <= i < len(offsets) else None

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, relative offset) of the last entry, read from disk if not loaded."""
        if self._loaded:
            return (self._timestamps[-1], self._offsets[-1]) if self._timestamps else None
        raw = self.read_last_raw()
        return _TIME_ENTRY.unpack(raw) if raw else None

    def rebuild(self, entries: list[tuple[int, int]]) -> None:
        """Replace every entry (memory and file) with ``entries``."""
        self._rewrite_file(b"".join(_TIME_ENTRY.pack(t, o) for t, o in entries))
        self._offsets = array("i", [o for _, o in entries])
        self._timestamps = array("q", [t for t, _ in entries])
        self._loaded = True
