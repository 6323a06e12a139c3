"""The durable half of a Raft node: its current term and vote, and its log.

Every method that changes state returns only once the change is durable (fsynced), because
the node sends the vote or acknowledgement that depends on it right after. A crash can cut
the log file mid-record; such a torn tail was never acknowledged, and ``FileRaftStorage``
cuts it off when it opens.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from core.cluster.raft.messages import Entry

__all__ = ["FileRaftStorage", "MemoryRaftStorage", "RaftStorage", "RaftStorageError"]

log = logging.getLogger(__name__)


class RaftStorageError(Exception):
    """The quorum state or log on disk cannot be used (e.g. an unreadable quorum-state)."""


class RaftStorage(Protocol):
    """Term, vote and log entries (1-based indexes; index 0 is the empty prefix, term 0)."""

    def load_state(self) -> tuple[int, int | None]: ...

    def save_state(self, term: int, voted_for: int | None) -> None: ...

    def last_index(self) -> int: ...

    def term_at(self, index: int) -> int: ...

    def entries(self, start: int, end: int) -> list[Entry]: ...

    def append(self, entries: Sequence[Entry]) -> None: ...

    def truncate_from(self, index: int) -> None: ...


class MemoryRaftStorage:
    """Storage in memory, durable for as long as the object lives. The simulation keeps one
    per node across that node's simulated crashes, which models storage that fsyncs before
    returning, as FileRaftStorage does."""

    def __init__(self) -> None:
        self._term = 0
        self._voted_for: int | None = None
        self._log: list[Entry] = []

    def load_state(self) -> tuple[int, int | None]:
        return self._term, self._voted_for

    def save_state(self, term: int, voted_for: int | None) -> None:
        self._term, self._voted_for = term, voted_for

    def last_index(self) -> int:
        return len(self._log)

    def term_at(self, index: int) -> int:
        return self._log[index - 1].term if index > 0 else 0

    def entries(self, start: int, end: int) -> list[Entry]:
        return self._log[start - 1 : end - 1]

    def append(self, entries: Sequence[Entry]) -> None:
        self._log.extend(entries)

    def truncate_from(self, index: int) -> None:
        del self._log[index - 1 :]


# length of data, CRC-32 of term and data, term
_HEADER = struct.Struct(">IIq")


class FileRaftStorage:
    """``quorum-state`` (JSON, replaced atomically) and ``raft.log`` (records of
    ``[data length][crc32][term][data]``) in one directory. The entries are also kept in
    memory: the metadata log is small, and the node reads it on every append."""

    def __init__(self, directory: str | Path) -> None:
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        # One process per metadata log: two nodes on one directory would each vote with it.
        self._lock = open(self._dir / ".lock", "a+b")  # noqa: SIM115 - closed by close()
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise RaftStorageError(
                f"{self._dir} is in use by another process: give each node its own "
                "log.dirs") from None
        self._state_path = self._dir / "quorum-state"
        self._log: list[Entry] = []
        self._positions: list[int] = []  # file offset of each entry
        try:
            self._term, self._voted_for = self._read_state()
            # Unbuffered, so a failed write leaves nothing queued to reach the file later.
            self._file = open(self._dir / "raft.log", "a+b", buffering=0)  # noqa: SIM115
            self._recover()
        except BaseException:
            self._lock.close()
            raise

    def _read_state(self) -> tuple[int, int | None]:
        try:
            state = json.loads(self._state_path.read_text(encoding="utf-8"))
            term, voted_for = int(state["term"]), state["voted_for"]
            return term, None if voted_for is None else int(voted_for)
        except FileNotFoundError:
            return 0, None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RaftStorageError(
                f"cannot read {self._state_path}: {exc}; this node's vote is unknown, so it "
                "must not rejoin the quorum with it: restore the file or remove the node's "
                "metadata directory and let it catch up as a new voter") from None

    def _recover(self) -> None:
        self._file.seek(0)
        data = self._file.read()
        position = 0
        while position + _HEADER.size <= len(data):
            length, crc, term = _HEADER.unpack_from(data, position)
            start = position + _HEADER.size
            payload = data[start : start + length]
            if len(payload) < length or zlib.crc32(payload, zlib.crc32(term.to_bytes(8, "big",
                                                   signed=True))) != crc:
                break
            self._positions.append(position)
            self._log.append(Entry(term, payload))
            position = start + length
        if position < len(data):
            log.warning("%s: cutting %d bytes of a torn or corrupt tail after entry %d",
                        self._dir / "raft.log", len(data) - position, len(self._log))
            self._file.truncate(position)
            os.fsync(self._file.fileno())
        self._end = position

    def close(self) -> None:
        self._file.close()
        self._lock.close()  # releases the flock

    def load_state(self) -> tuple[int, int | None]:
        return self._term, self._voted_for

    def save_state(self, term: int, voted_for: int | None) -> None:
        tmp = self._state_path.with_name("quorum-state.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"term": term, "voted_for": voted_for}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._state_path)
        _fsync_dir(self._dir)
        self._term, self._voted_for = term, voted_for

    def last_index(self) -> int:
        return len(self._log)

    def term_at(self, index: int) -> int:
        return self._log[index - 1].term if index > 0 else 0

    def entries(self, start: int, end: int) -> list[Entry]:
        return self._log[start - 1 : end - 1]

    def append(self, entries: Sequence[Entry]) -> None:
        if not entries:
            return
        chunks = []
        position = self._end
        for entry in entries:
            term = entry.term.to_bytes(8, "big", signed=True)
            crc = zlib.crc32(entry.data, zlib.crc32(term))
            record = _HEADER.pack(len(entry.data), crc, entry.term) + entry.data
            self._positions.append(position)
            position += len(record)
            chunks.append(record)
        try:
            pending = memoryview(b"".join(chunks))
            while pending:  # the file is opened for appending: it writes at _end
                pending = pending[self._file.write(pending) :]
            os.fsync(self._file.fileno())
        except OSError:
            # Disk full or an I/O error: cut what may have been written so the next
            # append starts at a record boundary, and let the node fail the operation.
            del self._positions[len(self._log) :]
            self._file.truncate(self._end)
            raise
        self._end = position
        self._log.extend(entries)

    def truncate_from(self, index: int) -> None:
        if index > len(self._log):
            return
        self._end = self._positions[index - 1]
        self._file.truncate(self._end)
        os.fsync(self._file.fileno())
        del self._log[index - 1 :]
        del self._positions[index - 1 :]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
