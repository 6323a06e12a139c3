"""The cleaner's per-partition checkpoint: how far the log is clean and when tombstones were.

Stored as ``cleaner-offset-checkpoint`` (JSON) in the partition directory and replaced
atomically (temporary file, fsync, rename)::

    {"version": 1, "cleaned_offset": 1200, "tombstone_passes": [[800, 1700000000000]]}

``cleaned_offset``: everything below it has been through a compaction pass; the bytes from
there to the first uncleanable segment are the "dirty" part of ``min.cleanable.dirty.ratio``.

``tombstone_passes``: Kafka keeps a tombstone for ``delete.retention.ms`` after the pass
that first cleaned it and records that horizon in the batch (attribute bit 6 plus the
baseTimestamp field). Our batch encoder always derives baseTimestamp from the first
record, so the horizon is kept here instead: an entry ``[end, time]`` says that the
tombstones below ``end`` not covered by an earlier entry were first cleaned at ``time``.
Only passes that kept such tombstones are recorded, and an entry is dropped by the first
pass that runs after its tombstones expired (that pass removes them all).
"""

from __future__ import annotations

import json
import logging
import os
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CHECKPOINT_NAME", "CleanerCheckpoint"]

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "cleaner-offset-checkpoint"
_VERSION = 1


@dataclass
class CleanerCheckpoint:
    """Where cleaning stopped and when the kept tombstones were first cleaned."""

    cleaned_offset: int = 0
    tombstone_passes: list[tuple[int, int]] = field(default_factory=list)  # sorted by end

    @classmethod
    def load(cls, directory: Path) -> CleanerCheckpoint:
        """The stored checkpoint; an empty one if it is missing or unreadable (which only
        makes the next pass treat more of the log as dirty and keep tombstones longer)."""
        path = directory / CHECKPOINT_NAME
        try:
            data = json.loads(path.read_text())
            if data.get("version") != _VERSION:
                raise ValueError(f"unknown version {data.get('version')!r}")
            passes = [(int(end), int(at)) for end, at in data.get("tombstone_passes", [])]
            return cls(int(data["cleaned_offset"]), sorted(passes))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable cleaner checkpoint %s: %s", path, exc)
            return cls()

    def save(self, directory: Path) -> None:
        path = directory / CHECKPOINT_NAME
        tmp = path.with_name(path.name + ".tmp")
        body = json.dumps({"version": _VERSION, "cleaned_offset": self.cleaned_offset,
                           "tombstone_passes": [list(p) for p in self.tombstone_passes]})
        with open(tmp, "w") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def first_cleaned_ms(self, offset: int) -> int | None:
        """When the tombstone at ``offset`` was first cleaned, if a recorded pass did."""
        i = bisect_right(self.tombstone_passes, offset, key=lambda p: p[0])
        return self.tombstone_passes[i][1] if i < len(self.tombstone_passes) else None

    def tombstones_due(self, now_ms: int, delete_retention_ms: int) -> bool:
        return any(at + delete_retention_ms <= now_ms for _, at in self.tombstone_passes)

    def after_pass(self, now_ms: int, delete_retention_ms: int, cleaned_offset: int,
                   new_tombstones: int) -> CleanerCheckpoint:
        """The checkpoint after a pass at ``now_ms`` that cleaned below ``cleaned_offset``
        and kept ``new_tombstones`` tombstones it cleaned for the first time."""
        passes = [(end, at) for end, at in self.tombstone_passes
                  if at + delete_retention_ms > now_ms]
        if new_tombstones:
            passes.append((cleaned_offset, now_ms))
        return CleanerCheckpoint(cleaned_offset, passes)
