"""FileStreamSourceTask: reads lines of a file (tailing it) or of stdin into one topic."""

from __future__ import annotations

import logging
import os
import select
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from connect.api import AbstractConfig, ConnectError, Schema, SourceRecord, SourceTask
from connectors.file.config import (
    BATCH_SIZE_CONFIG,
    FILE_CONFIG,
    FILENAME_FIELD,
    POSITION_FIELD,
    SOURCE_CONFIG_DEF,
    STDIN_PARTITION_NAME,
    TOPIC_CONFIG,
    plugin_version,
)
from connectors.file.lines import LineSplitter

__all__ = ["FileStreamSourceTask"]

log = logging.getLogger(__name__)

_CHUNK_BYTES = 64 * 1024
#: Kafka's task waits a second when there is no new data or no file yet.
_IDLE_WAIT_S = 1.0


class FileStreamSourceTask(SourceTask):
    """One line, one record: value schema STRING, no key, source partition
    ``{"filename": file}`` and offset ``{"position": bytes from the start of the file to
    just after the line}``, as Kafka's FileStreamSourceTask stores them.

    A file is opened on the first ``poll()`` (and again each poll until it exists, with a
    warning, as Kafka waits for it), positioned at the stored offset, and then tailed:
    lines appended later are read by later polls. Only complete lines are emitted; a last
    line still being written waits for its terminator. Reading stdin tracks no offsets
    (``position`` is None); the line left unterminated when stdin closes is emitted, since
    nothing can complete it.

    Threading: ``poll()`` runs on the task's thread; ``stop()`` may run on another one
    while ``poll()`` waits. Both take ``_lock`` around the stream, so ``stop()`` never
    closes a file under a read in progress; waits happen outside the lock, on
    ``_stopping``, which ``stop()`` sets to wake them.
    """

    def __init__(self, *, idle_wait_s: float = _IDLE_WAIT_S) -> None:
        """The runtime constructs tasks without arguments; ``idle_wait_s`` (how long a
        poll with nothing to read waits before returning None) is for tests."""
        self._idle_wait_s = idle_wait_s
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._splitter = LineSplitter()
        self._stream: IO[bytes] | None = None  # guarded by _lock
        self._stdin_fd: int | None = None
        self._stdin_ended = False
        self._filename: str | None = None
        self._topic = ""
        self._batch_size = 0
        self._position: int | None = None  # byte offset after the last emitted line
        self._warned_missing = False

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(SOURCE_CONFIG_DEF, props)
        self._filename = config.get_string(FILE_CONFIG) or None
        self._topic = config.get_string(TOPIC_CONFIG) or ""
        self._batch_size = config.get_int(BATCH_SIZE_CONFIG) or 1
        if self._filename is None:
            # A pipe cannot be rewound, so stdin has no offsets to resume from.
            self._stdin_fd = sys.stdin.fileno()
            self._position = None
            log.info("Reading lines from stdin into topic %s", self._topic)

    def poll(self) -> Sequence[SourceRecord] | None:
        if self._stopping.is_set():
            return None
        if self._filename is not None and self._stream is None and not self._open_file():
            self._stopping.wait(self._idle_wait_s)
            return None
        with self._lock:
            if self._stopping.is_set():
                return None
            records = self._read_lines()
        if records:
            return records
        self._stopping.wait(self._idle_wait_s)
        return None

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
                self._stream = None

    # -- opening --------------------------------------------------------------------

    def _partition(self) -> dict[str, Any]:
        return {FILENAME_FIELD: self._filename or STDIN_PARTITION_NAME}

    def _open_file(self) -> bool:
        """Open the file at its stored offset; False (after logging) if it does not
        exist yet. Other I/O errors fail the task, as Kafka's do."""
        assert self._filename is not None
        try:
            stream = open(self._filename, "rb", buffering=0)  # noqa: SIM115  closed by stop()
        except FileNotFoundError:
            if not self._warned_missing:
                log.warning(
                    "Couldn't find file %s for FileStreamSourceTask, waiting for it to be created",
                    self._filename,
                )
                self._warned_missing = True
            return False
        except OSError as exc:
            raise ConnectError(f"Error while trying to open file {self._filename}: {exc}") from exc
        try:
            position = self._stored_position()
            if position:
                size = os.fstat(stream.fileno()).st_size
                if position > size:
                    # Kafka seeks regardless; say so, since it usually means the file was
                    # truncated or replaced and lines before the offset will be skipped.
                    log.warning(
                        "Stored offset %d of %s is past its end (%d bytes); reading resumes "
                        "once the file grows past it",
                        position,
                        self._filename,
                        size,
                    )
                stream.seek(position)
                log.info("Resuming %s from byte offset %d", self._filename, position)
        except BaseException:
            stream.close()
            raise
        with self._lock:
            if self._stopping.is_set():
                stream.close()
                return False
            self._stream = stream
        self._position = position
        self._warned_missing = False
        log.info("Opened %s for reading into topic %s", self._filename, self._topic)
        return True

    def _stored_position(self) -> int:
        offset = self.context.offset_storage_reader().offset(self._partition())
        if offset is None:
            return 0
        position = offset.get(POSITION_FIELD)
        if position is None:
            return 0
        if isinstance(position, bool) or not isinstance(position, int):
            raise ConnectError(
                f"Offset position is the incorrect type: {POSITION_FIELD}={position!r} for "
                f"{self._filename} should be an integer byte offset; reset the connector's "
                "offsets to read the file from the start."
            )
        if position < 0:
            raise ConnectError(
                f"Offset position {position} for {self._filename} is negative; reset the "
                "connector's offsets to read the file from the start."
            )
        return position

    # -- reading (under _lock) ------------------------------------------------------

    def _read_lines(self) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        while len(records) < self._batch_size:
            found = self._splitter.next_line()
            if found is None:
                chunk = self._read_chunk()
                if chunk:
                    self._splitter.feed(chunk)
                    continue
                if chunk == b"" and self._stdin_fd is not None and not self._stdin_ended:
                    self._stdin_ended = True
                    rest = self._splitter.take_rest()
                    log.info("stdin was closed; no more lines will be read")
                    if rest:
                        records.append(self._record(rest))
                break
            line, consumed = found
            if self._position is not None:
                self._position += consumed
            records.append(self._record(line))
        return records

    def _read_chunk(self) -> bytes | None:
        """Bytes available now without blocking; b"" at the end of the stream and None
        when stdin has nothing yet. At the end of a file more may be appended later."""
        if self._stdin_fd is not None:
            if self._stdin_ended:
                return None
            readable, _, _ = select.select([self._stdin_fd], [], [], 0)
            return os.read(self._stdin_fd, _CHUNK_BYTES) if readable else None
        if self._stream is None:
            return None
        return self._stream.read(_CHUNK_BYTES)

    def _record(self, line: bytes) -> SourceRecord:
        return SourceRecord(
            topic=self._topic,
            value_schema=Schema.STRING_SCHEMA,
            # Kafka's reader replaces malformed input with U+FFFD too.
            value=line.decode("utf-8", errors="replace"),
            timestamp=int(time.time() * 1000),
            source_partition=self._partition(),
            source_offset={POSITION_FIELD: self._position},
        )
