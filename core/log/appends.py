"""Appending to a partition log: a producer's batches (offsets assigned here) and a
follower's copy of its leader's batches (stored byte for byte), plus the append listeners."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.log.errors import StorageError, UnexpectedAppendOffsetError
from core.log.log_state import LogState
from core.log.records import Header, encode_batch, set_base_offset, set_log_append_time
from core.log.scan import BatchInfo
from core.log.segment import LogSegment
from core.log.validation import require_keys, validate_append, validate_follower_append

__all__ = ["AppendInfo", "LogAppends"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Where an append landed. ``log_append_time_ms`` is -1 for CreateTime topics."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    max_timestamp: int


class LogAppends(LogState):
    """The append path of ``PartitionLog``; every write runs under ``_lock``."""

    def append(self, batch: bytes | bytearray, *, now_ms: int | None = None) -> AppendInfo:
        """Validate ``batch`` (one or more whole v2 batches), assign offsets and store it.

        All or nothing: if a write fails (disk full, I/O error) the log, its indexes and
        its end offset stay as they were, the data directory goes offline for writes and
        StorageError is raised; while it is offline, LogDirOfflineError.
        Raises InvalidRecordError/CorruptRecordError for a malformed batch,
        RecordTooLargeError above ``max.message.bytes``, LogClosedError after close.
        """
        buf = batch if type(batch) is bytearray else bytearray(batch)
        config = self.config
        infos, records = validate_append(buf, config)
        if config.compact:
            require_keys(buf, infos)
        with self._lock:
            self._check_open()
            self._check_writable()
            now = self._now_ms() if now_ms is None else now_ms
            if config.log_append_time:
                for b in infos:
                    set_log_append_time(buf, now, b.position)
                infos = [b._replace(max_timestamp=now) for b in infos]
            offset = first_offset = self._segments.view.end_offset
            for i, b in enumerate(infos):
                set_base_offset(buf, offset, b.position)
                last = offset + b.last_offset
                infos[i] = BatchInfo(b.position, offset, last, b.max_timestamp, b.size)
                offset = last + 1
            flush_now, listeners = self._store(buf, infos, records, now)
        self._after_append(listeners, flush_now)
        return AppendInfo(first_offset, offset - 1, now if config.log_append_time else -1,
                          max(b.max_timestamp for b in infos))

    def append_as_follower(self, batches: bytes | bytearray) -> AppendInfo:
        """A follower's append of its leader's batches (Kafka's ``appendAsFollower``):
        stored byte for byte, so every replica holds the leader's offsets, timestamps
        (LogAppendTime ones included), partition leader epochs and CRCs.

        The batches must be well formed with valid CRCs and continue the log: the first
        may start past the log end (the leader's cleaner removed the offsets between),
        never below it. A trailing partial batch is left out. Indexes, rolling and
        count-based fsync (``flush.messages``) are as for ``append``; so are the errors,
        plus UnexpectedAppendOffsetError for batches starting below the log end (nothing
        is appended then).
        """
        buf = batches if type(batches) is bytearray else bytearray(batches)
        infos, records, length = validate_follower_append(buf)
        if length < len(buf):
            buf = buf[:length]
        with self._lock:
            self._check_open()
            self._check_writable()
            end = self._segments.view.end_offset
            first_offset = infos[0].base_offset
            if first_offset < end:
                raise UnexpectedAppendOffsetError(
                    f"cannot append the leader's batches from offset {first_offset} to "
                    f"{self.topic}-{self.partition}: its log already ends at {end}",
                    first_offset=first_offset, log_end_offset=end)
            flush_now, listeners = self._store(buf, infos, records, self._now_ms())
        self._after_append(listeners, flush_now)
        append_time = -1
        if self.config.log_append_time:
            append_time = max(b.max_timestamp for b in infos)
        return AppendInfo(first_offset, infos[-1].last_offset, append_time,
                          max(b.max_timestamp for b in infos))

    def _store(self, buf: bytearray, infos: list[BatchInfo], records: int,
               now: int) -> tuple[bool, list[Callable[[int], None]]]:
        """Write batches whose offsets are set (caller holds ``_lock``): roll if needed,
        append, move the log end. Returns whether a count-based flush is due, and the
        listeners to call once the lock is released."""
        config = self.config
        last = infos[-1].last_offset
        try:
            segment = self._maybe_roll(len(buf), last, len(infos), now)
            position = segment.size
            segment.append(buf, infos, config.index_interval_bytes)
        except (StorageError, OSError) as exc:
            self._write_failed("append", exc, segment_damaged=self._segments.active.damaged)
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"cannot append to {self.topic}-{self.partition}: {exc}") \
                from exc
        if segment.created_ms is None:
            segment.created_ms = now
        self._segments.appended(last + 1)
        self._flush.note_append(segment, records, now)
        self._page_cache.appended(segment, position, len(buf), config.page_cache_window_bytes)
        return self._flush.due_by_count(config), self._listeners

    def _after_append(self, listeners: list[Callable[[int], None]], flush_now: bool) -> None:
        """Outside ``_lock``: tell the listeners, then fsync if ``flush.messages`` says so."""
        for listener in listeners:
            self._notify(listener)
        if flush_now:
            self.flush()

    def append_records(
        self,
        records: Sequence[tuple[bytes | None, bytes | None, Sequence[Header], int | None]],
        *,
        compression: int = 0,
        now_ms: int | None = None,
    ) -> AppendInfo:
        """Encode ``(key, value, headers, timestamp_ms)`` tuples as one batch and append it.

        A ``None`` timestamp means now, by this log's clock.
        """
        now = self._now_ms() if now_ms is None else now_ms
        batch = encode_batch(records, compression=compression, default_timestamp=now)
        return self.append(batch, now_ms=now)

    def _maybe_roll(self, size: int, last_offset: int, batches: int, now: int) -> LogSegment:
        """The segment to append to, after rolling if the active one is full or old."""
        segment = self._segments.active
        if segment.should_roll(self.config, size, last_offset, batches, now):
            return self._roll()
        return segment

    def add_append_listener(self, fn: Callable[[int], None]) -> None:
        """Call ``fn(log_end_offset)`` after every append, on the appending thread, outside
        the log's locks. A listener must be quick and must not raise."""
        with self._lock:
            self._listeners = [*self._listeners, fn]

    def remove_append_listener(self, fn: Callable[[int], None]) -> None:
        with self._lock:
            listeners = list(self._listeners)  # appends iterate the old list without the lock
            if fn in listeners:
                listeners.remove(fn)
            self._listeners = listeners

    def _notify(self, listener: Callable[[int], None]) -> None:
        try:
            listener(self._segments.view.end_offset)  # the current end, never a stale one
        except Exception:  # a listener's bug must not fail an append that has succeeded
            log.exception("append listener of %s-%d failed", self.topic, self.partition)
