"""Opening a partition directory: finishing interrupted swaps and deletions, recovering segments.

Leftovers and how they are resolved (compaction's protocol is in ``core.log.cleaner``):

* ``*.cleaned``: a replacement still being written; the originals are intact, so it is
  removed.
* ``*.log.swap``: a replacement that was complete (fsynced) before it was renamed, so the
  swap is finished: the segments it replaces (live segments whose base offset lies in
  ``[swap base, swap next offset)``) are removed and the swap takes the live name. Its
  indexes are rebuilt from the log.
* ``*.deleted``: a segment removed by retention or compaction; removed.
* index files without a ``.log``: removed.

Then every segment but the last is checked cheaply (index tails plus a walk of the batch
headers after the last index entry) and fully recovered only if that check fails; the last,
active segment is always scanned batch by batch (length, magic, CRC-32C, offsets) and cut
at the first bad or partial batch, and its indexes are rebuilt.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from core.log.config import TopicConfig
from core.log.scan import BatchWalk
from core.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    file_name,
    parse_base_offset,
    roll_jitter,
)

__all__ = ["CLEANED_SUFFIX", "DELETED_SUFFIX", "SWAP_SUFFIX", "fsync_directory", "load_segments"]

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
_SEGMENT_KINDS = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


def fsync_directory(directory: Path) -> None:
    """Make renames and new files in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_segments(directory: Path, config: TopicConfig, now_ms: int) -> list[LogSegment]:
    """Resolve leftovers, open and recover every segment; at least one segment is returned.

    What recovery keeps is fsynced, so it all counts as flushed.
    """
    index_interval = config.index_interval_bytes
    changed = _resolve_leftovers(directory)
    bases = sorted(_live_bases(directory))
    segments: list[LogSegment] = []
    try:
        for i, base in enumerate(bases):
            segment = LogSegment(directory, base)
            segments.append(segment)
            if i + 1 == len(bases):
                changed |= segment.recover(index_interval) > 0
            elif not segment.load_sealed(bases[i + 1]):
                log.warning("%s: index missing or inconsistent with the log; recovering it",
                            segment.path(LOG_SUFFIX))
                changed |= segment.recover(index_interval, max_last_offset=bases[i + 1]) > 0
                segment.seal()
        if not segments:
            segments.append(LogSegment(directory, 0, create=True))
            changed = True
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    if changed:
        for segment in segments:
            segment.flush()
        fsync_directory(directory)
    active = segments[-1]
    active.flush()  # recovery read it, possibly from pages a killed process left unwritten
    if not active.is_empty:
        # As Kafka does, segment.ms counts from the first batch's timestamp after a restart
        # (bounded by now), so that restarts do not postpone rolling forever.
        first = active.first_batch_timestamp
        active.created_ms = first if first is not None and 0 <= first <= now_ms else now_ms
    active.roll_jitter_ms = roll_jitter(config)
    return segments


def _live_bases(directory: Path) -> set[int]:
    bases = set()
    for name in os.listdir(directory):
        if name.endswith(LOG_SUFFIX):
            base = parse_base_offset(name)
            if base is not None:
                bases.add(base)
    return bases


def _resolve_leftovers(directory: Path) -> bool:
    """Apply the rules in the module docstring; True if anything was changed."""
    names = os.listdir(directory)
    changed = False
    for name in names:
        if name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX)) and parse_base_offset(name) is not None:
            log.info("%s: removing %s left by an interrupted cleaning or deletion", directory, name)
            _unlink(directory / name)
            changed = True
    for name in sorted(n for n in names if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)):
        base = parse_base_offset(name)
        if base is not None:
            _finish_swap(directory, base)
            changed = True
    live = _live_bases(directory)
    for name in os.listdir(directory):
        base = parse_base_offset(name)
        if base is None or name.endswith(LOG_SUFFIX):
            continue
        if name.endswith(SWAP_SUFFIX) or (
            name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX)) and base not in live
        ):
            log.info("%s: removing orphaned %s", directory, name)
            _unlink(directory / name)
            changed = True
    return changed


def _finish_swap(directory: Path, base: int) -> None:
    swap = directory / (file_name(base, LOG_SUFFIX) + SWAP_SUFFIX)
    fd = os.open(swap, os.O_RDONLY)
    try:
        walk = BatchWalk(fd, 0, os.fstat(fd).st_size, segment_base=base)
        next_offset = base
        for batch in walk:
            next_offset = batch.last_offset + 1
    finally:
        os.close(fd)
    replaced = [b for b in _live_bases(directory) if base <= b < max(next_offset, base + 1)]
    log.info("%s: finishing an interrupted compaction swap at offset %d (replaces %s)",
             directory, base, replaced)
    for old in replaced:
        for kind in _SEGMENT_KINDS:
            _unlink(directory / file_name(old, kind))
    for kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        _unlink(directory / (file_name(base, kind) + SWAP_SUFFIX))
        _unlink(directory / file_name(base, kind))
    os.replace(swap, directory / file_name(base, LOG_SUFFIX))


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
