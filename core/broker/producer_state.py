"""Idempotent producers: producer ids, and per-partition sequence state for de-duplication.

Kafka's rules (``ProducerStateManager``/``ProducerAppendInfo``): per partition and producer
id the broker keeps the epoch and the last 5 batches' sequence ranges and offsets. A retried
batch it still remembers is answered with its original offsets and not appended again; a
batch that skips sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER; one from an older epoch
is INVALID_PRODUCER_EPOCH; a new epoch must start at sequence 0. A producer the partition
has no state for is accepted at any sequence (Kafka >= 2.5, KIP-360): its state may have
been removed by retention or expiry, and refusing it would only make the client reset.
Ferry also answers DUPLICATE_SEQUENCE_NUMBER for a retry older than the 5 remembered
batches (the data is stored; clients count it as success).

State lives in memory and is rebuilt, the first time a partition is used and for every
partition at startup, from the batch headers of its last two segments (producer id, epoch
and sequences are in the 61-byte header, so no record is decoded).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.broker.meta import write_atomically
from core.log.log import AppendInfo, PartitionLog
from core.log.records import BatchHeader
from core.protocol.errors import ErrorCode

__all__ = [
    "BatchMetadata",
    "ProducerIdAllocator",
    "ProducerStateError",
    "ProducerStateManager",
]

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
SEQUENCE_MODULUS = 2**31  # sequences are non-negative int32s and wrap to 0
_SCANNED_SEGMENTS = 2
_HEADER = struct.Struct(">qiibIhiqqqhii")
_SCAN_CHUNK = 8192
_LOG_APPEND_TIME = 0x08
_CONTROL = 0x20
_ID_BLOCK = 1000
_IDS_FILE = "producer-ids.properties"


class ProducerStateError(Exception):
    """A batch's producer id, epoch or sequence is not acceptable; ``error_code`` says why."""

    def __init__(self, error_code: ErrorCode, message: str):
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """What a retry of a batch is answered with."""

    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    log_append_time_ms: int
    max_timestamp: int


@dataclass(slots=True)
class _ProducerEntry:
    epoch: int
    last_seen_ms: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    def remember(self, epoch: int, batch: BatchMetadata, seen_ms: int) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()
        self.batches.append(batch)
        self.last_seen_ms = max(self.last_seen_ms, seen_ms)


class _PartitionProducers:
    """The producers of one partition. ``lock`` makes check-append-remember atomic."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[int, _ProducerEntry] = {}


def _seq_add(seq: int, delta: int) -> int:
    return (seq + delta) % SEQUENCE_MODULUS


def _check_sequence(entry: _ProducerEntry | None, pid: int, epoch: int, first_seq: int,
                    last_seq: int) -> BatchMetadata | None:
    """The remembered batch if this one is a duplicate of it, None if it may be appended;
    ProducerStateError otherwise."""
    if entry is None:
        return None
    if epoch < entry.epoch:
        raise ProducerStateError(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            f"producer {pid} epoch {epoch} is older than the current epoch {entry.epoch}")
    if epoch > entry.epoch:
        if first_seq != 0:
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {pid}: the new epoch {epoch} starts at sequence {first_seq}, not 0")
        return None
    for batch in entry.batches:
        if batch.first_seq == first_seq and batch.last_seq == last_seq:
            return batch
    if not entry.batches:
        return None
    expected = _seq_add(entry.batches[-1].last_seq, 1)
    if first_seq == expected:
        return None
    if (first_seq - expected) % SEQUENCE_MODULUS < SEQUENCE_MODULUS // 2:
        raise ProducerStateError(
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            f"producer {pid} epoch {epoch}: sequence {first_seq} after {expected - 1}; "
            "batches are missing in between")
    raise ProducerStateError(
        ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
        f"producer {pid} epoch {epoch}: batch {first_seq}-{last_seq} was stored before "
        "and is older than the batches remembered for retries")


class ProducerIdAllocator:
    """Producer ids from a counter in ``DATA_DIR/producer-ids.properties``.

    Ids are reserved in blocks of 1000, as Kafka's controller hands them out: the end of
    the current block is written (fsync) before any id of it is given, so a restart never
    gives an id twice, at the price of skipping the unused rest of a block.
    """

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / _IDS_FILE
        self._lock = threading.Lock()
        self._next = self._block_end = self._load()

    def _load(self) -> int:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "next.block.start" and value.strip().isdigit():
                return int(value)
        raise OSError(f"{self._path} has no next.block.start; restore or remove it")

    def allocate(self) -> int:
        """A producer id never given before by this data directory."""
        with self._lock:
            if self._next >= self._block_end:
                self._reserve(self._next + _ID_BLOCK)
            pid = self._next
            self._next += 1
            return pid

    def ensure_above(self, producer_id: int) -> None:
        """Never hand out ``producer_id`` or anything below (ids found in the log)."""
        with self._lock:
            if producer_id >= self._next:
                self._next = producer_id + 1

    def _reserve(self, block_end: int) -> None:
        write_atomically(self._path, f"next.block.start={block_end}\n")
        self._block_end = block_end


class ProducerStateManager:
    """Producer ids and the sequence state of every partition; thread-safe.

    ``append`` runs on whichever thread appends (the event loop, or an executor thread
    for appends that fsync); state is created on first use of a partition, keyed by the
    PartitionLog object so that a re-created topic starts with no state.
    """

    def __init__(self, data_dir: Path, *, expiration_ms: int = 86400000,
                 clock: Callable[[], float] = time.time) -> None:
        self.ids = ProducerIdAllocator(data_dir)
        self._expiration_ms = expiration_ms
        self._clock = clock
        self._lock = threading.Lock()
        self._partitions: weakref.WeakKeyDictionary[PartitionLog, _PartitionProducers] = (
            weakref.WeakKeyDictionary())

    def allocate_producer_id(self) -> int:
        return self.ids.allocate()

    def load(self, plog: PartitionLog) -> None:
        """Rebuild ``plog``'s state now rather than at its first idempotent append."""
        self._state(plog)

    def forget(self, plog: PartitionLog) -> None:
        """Drop ``plog``'s state: a follower's log grew (or was cut) without this manager,
        so it is rebuilt from the log at the next idempotent append (a new leader)."""
        with self._lock:
            self._partitions.pop(plog, None)

    def append(self, plog: PartitionLog, header: BatchHeader, batch: bytearray) -> AppendInfo:
        """Append one batch of an idempotent producer (``header.producer_id >= 0``) unless
        it is a retry of a remembered batch, whose original AppendInfo is returned.

        Raises ProducerStateError, or what ``PartitionLog.append`` raises.
        """
        pid, epoch, first_seq = header.producer_id, header.producer_epoch, header.base_sequence
        if first_seq < 0 or epoch < 0:
            raise ProducerStateError(
                ErrorCode.INVALID_RECORD,
                f"producer {pid} sent a batch without a sequence number or epoch")
        last_seq = _seq_add(first_seq, header.last_offset_delta)
        state = self._state(plog)
        with state.lock:
            entry = state.entries.get(pid)
            duplicate = _check_sequence(entry, pid, epoch, first_seq, last_seq)
            if duplicate is not None:
                log.debug("duplicate batch %d-%d of producer %d on %s-%d", first_seq, last_seq,
                          pid, plog.topic, plog.partition)
                return AppendInfo(duplicate.base_offset, duplicate.last_offset,
                                  duplicate.log_append_time_ms, duplicate.max_timestamp)
            info = plog.append(batch)
            now = int(self._clock() * 1000)
            if entry is None:
                entry = state.entries[pid] = _ProducerEntry(epoch, now)
            entry.remember(epoch, BatchMetadata(first_seq, last_seq, info.base_offset,
                                                info.last_offset, info.log_append_time_ms,
                                                info.max_timestamp), now)
            return info

    def expire(self, now_ms: int | None = None) -> int:
        """Forget producers idle for producer.id.expiration.ms; returns how many. A
        partition busy appending is skipped until the next call (never waits)."""
        now = int(self._clock() * 1000) if now_ms is None else now_ms
        cutoff = now - self._expiration_ms
        with self._lock:
            states = list(self._partitions.values())
        removed = 0
        for state in states:
            if not state.lock.acquire(blocking=False):
                continue
            try:
                for pid in [p for p, e in state.entries.items() if e.last_seen_ms < cutoff]:
                    del state.entries[pid]
                    removed += 1
            finally:
                state.lock.release()
        return removed

    def _state(self, plog: PartitionLog) -> _PartitionProducers:
        state = self._partitions.get(plog)
        if state is not None:
            return state
        with self._lock:
            state = self._partitions.get(plog)
            if state is None:
                state = _PartitionProducers()
                self._rebuild(plog, state)
                self._partitions[plog] = state
            return state

    def _rebuild(self, plog: PartitionLog, state: _PartitionProducers) -> None:
        started = time.monotonic()
        batches = 0
        for segment in plog.segments()[-_SCANNED_SEGMENTS:]:
            if not segment.acquire():
                continue  # removed by retention meanwhile: its producers are history
            try:
                for fields in _walk_headers(segment.fd, segment.size):
                    batches += 1
                    self._replay(state, fields)
            finally:
                segment.release()
        if state.entries:
            self.ids.ensure_above(max(state.entries))
            log.info("rebuilt the state of %d producers of %s-%d from %d batch headers in "
                     "%.0f ms", len(state.entries), plog.topic, plog.partition, batches,
                     (time.monotonic() - started) * 1000)

    @staticmethod
    def _replay(state: _PartitionProducers, fields: tuple) -> None:
        (base, _, _, _, _, attributes, last_delta, _, max_ts, pid, epoch, first_seq,
         _) = fields
        if pid < 0 or attributes & _CONTROL or first_seq < 0:
            return
        append_time = max_ts if attributes & _LOG_APPEND_TIME else -1
        batch = BatchMetadata(first_seq, _seq_add(first_seq, last_delta), base,
                              base + last_delta, append_time, max_ts)
        entry = state.entries.get(pid)
        if entry is None:
            entry = state.entries[pid] = _ProducerEntry(epoch, max_ts)
        elif epoch < entry.epoch:
            return
        entry.remember(epoch, batch, max_ts)


def _walk_headers(fd: int, end: int):
    """Yield the raw header fields of each batch of a segment file, reading only headers;
    stops at the first header that is not a whole v2 batch (recovery made the tail good)."""
    pos = 0
    chunk, chunk_start = b"", 0
    while pos + _HEADER.size <= end:
        off = pos - chunk_start
        if off < 0 or off + _HEADER.size > len(chunk):
            chunk = os.pread(fd, min(_SCAN_CHUNK, end - pos), pos)
            chunk_start, off = pos, 0
            if len(chunk) < _HEADER.size:
                return
        fields = _HEADER.unpack_from(chunk, off)
        size = 12 + fields[1]
        if fields[3] != 2 or size < _HEADER.size or pos + size > end:
            return
        yield fields
        pos += size
