"""Executor side of a read: fetch one offset range and yield Arrow record batches.

Runs in Spark's Python workers. A worker is reused for many tasks, so it keeps one
backend per log URL for its lifetime instead of connecting once per task.
"""

from __future__ import annotations

import atexit
import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping

import pyarrow as pa

from connectors.spark.arrow import records_to_columns
from connectors.spark.planning import DataLossError, OffsetRange
from core.backends import LogBackend, TopicPartition, open_backend
from core.backends import errors as be

__all__ = ["FETCH_BYTES", "read_range", "shared_backend"]

log = logging.getLogger(__name__)

#: Bytes asked for per fetch: big enough that per-request overhead vanishes (a fetch of
#: 100-byte records returns ~60k of them), small enough to bound a worker's memory.
FETCH_BYTES = 8 * 1024 * 1024
#: How long a read waits for records that planning saw but a fetch did not return.
_STALL_S = 30.0

_backends: dict[tuple[str, tuple], LogBackend] = {}
_lock = threading.Lock()


def shared_backend(url: str, client_config: Mapping[str, str] | None = None) -> LogBackend:
    """This process's backend for ``url`` (with ``client_config``: security settings),
    opened on first use, closed at exit."""
    key = (url, tuple(sorted((client_config or {}).items())))
    with _lock:
        backend = _backends.get(key)
        if backend is None:
            backend = _backends[key] = open_backend(url, client_config)
        return backend


@atexit.register
def _close_all() -> None:
    with _lock:
        for backend in _backends.values():
            backend.close()
        _backends.clear()


ColumnHook = Callable[[dict[str, pa.Array]], dict[str, pa.Array]]


def read_range(r: OffsetRange, url: str, schema: pa.Schema, *, include_headers: bool,
               fail_on_data_loss: bool, transform: ColumnHook | None = None,
               client_config: Mapping[str, str] | None = None
               ) -> Iterator[pa.RecordBatch]:
    """Records ``[r.start, r.end)`` of one partition as record batches of ``schema``.

    Follows ``next_offset`` across compaction gaps. Offsets that retention removed meanwhile
    raise ``DataLossError`` with ``fail_on_data_loss``, else are skipped."""
    backend = shared_backend(url, client_config)
    tp = TopicPartition(r.topic, r.partition)
    pos = r.start
    stalled_since: float | None = None
    while pos < r.end:
        try:
            result = backend.fetch({tp: pos}, max_wait_ms=200, max_bytes=FETCH_BYTES,
                                   max_partition_bytes=FETCH_BYTES)[tp]
        except be.OffsetOutOfRangeError as exc:
            pos = _lost(r, pos, exc.log_start_offset, fail_on_data_loss, str(exc))
            continue
        except be.UnknownTopicError:
            _lost(r, pos, r.end, fail_on_data_loss, f"topic {r.topic!r} was deleted")
            return
        records = result.records
        if records:
            stalled_since = None
            if records[-1].offset >= r.end:
                records = records[:bisect.bisect_left(records, r.end, key=lambda c: c.offset)]
            if records:
                columns = records_to_columns(records, include_headers)
                if transform is not None:
                    columns = transform(columns)
                yield pa.RecordBatch.from_arrays([columns[f.name] for f in schema],
                                                 schema=schema)
        if result.next_offset > pos:
            pos = result.next_offset
            continue
        if result.high_watermark <= pos:
            # The log ends before the range does: truncated or re-created since planning.
            _lost(r, pos, r.end, fail_on_data_loss,
                  f"the log of {r.topic}-{r.partition} ends at {result.high_watermark}")
            return
        stalled_since = stalled_since or time.monotonic()
        if time.monotonic() - stalled_since > _STALL_S:
            raise TimeoutError(f"{r.topic}-{r.partition}: no progress at offset {pos} "
                               f"for {_STALL_S:.0f} s")


def _lost(r: OffsetRange, pos: int, resume: int, fail: bool, why: str) -> int:
    message = (f"{r.topic}-{r.partition}: offsets {pos}..{min(resume, r.end) - 1} of the planned "
               f"range {r.start}..{r.end - 1} are gone ({why}); some data may have been lost")
    if fail:
        raise DataLossError(message + ". Set failOnDataLoss=false to skip them.")
    log.warning("%s; skipping them (failOnDataLoss=false)", message)
    return max(resume, pos + 1)
