"""The leader-epoch cache (KIP-101): for each leader epoch, the first offset written in it.

It answers OffsetForLeaderEpoch (the end offset of an epoch, as this replica knows it) and
the Fetch divergence check, and survives restarts in Kafka's ``leader-epoch-checkpoint``
format (a version line ``0``, a count line, then ``EPOCH START_OFFSET`` lines), replaced
atomically and fsynced.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["UNDEFINED", "EpochEntry", "LeaderEpochCache", "LeaderEpochCheckpointError",
           "diverging_epoch", "truncation_offset"]

UNDEFINED = -1
CHECKPOINT = "leader-epoch-checkpoint"


class LeaderEpochCheckpointError(Exception):
    """The checkpoint file is not Kafka's format."""


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self.entries: list[EpochEntry] = list(entries or [])

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else UNDEFINED

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (its first batch). An epoch not
        newer than the latest is ignored; entries starting at or after ``start_offset``
        are dropped first (they were truncated away). Returns whether it changed."""
        if epoch <= self.latest_epoch:
            return False
        self.entries = [e for e in self.entries if e.start_offset < start_offset]
        self.entries.append(EpochEntry(epoch, start_offset))
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's ``endOffsetFor``: the largest epoch <= ``epoch`` this replica knows, and
        the offset where it ended (the start of the next epoch, or the log end for the
        latest); ``(UNDEFINED, UNDEFINED)`` when ``epoch`` is older than every entry."""
        if not self.entries or epoch < self.entries[0].epoch:
            return UNDEFINED, UNDEFINED
        if epoch >= self.latest_epoch:
            return self.latest_epoch, log_end_offset
        for i, entry in enumerate(self.entries):
            if entry.epoch > epoch:
                return self.entries[i - 1].epoch, entry.start_offset
        return self.latest_epoch, log_end_offset  # unreachable: epoch < latest

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut to ``end_offset``: epochs starting at or after it are gone."""
        self.entries = [e for e in self.entries if e.start_offset < end_offset]

    # -- the checkpoint file --------------------------------------------------------------

    def write(self, directory: Path) -> None:
        path = directory / CHECKPOINT
        tmp = path.with_name(CHECKPOINT + ".tmp")
        text = f"0\n{len(self.entries)}\n" + "".join(
            f"{e.epoch} {e.start_offset}\n" for e in self.entries)
        with open(tmp, "w", encoding="ascii") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @classmethod
    def read(cls, directory: Path) -> LeaderEpochCache:
        path = directory / CHECKPOINT
        try:
            lines = path.read_text(encoding="ascii").split("\n")
        except FileNotFoundError:
            return cls()
        except (OSError, UnicodeDecodeError) as exc:
            raise LeaderEpochCheckpointError(f"cannot read {path}: {exc}") from None
        try:
            if lines[0].strip() != "0":
                raise ValueError(f"version {lines[0]!r} is not 0")
            count = int(lines[1])
            entries = []
            for line in lines[2 : 2 + count]:
                epoch, offset = line.split()
                entries.append(EpochEntry(int(epoch), int(offset)))
            if len(entries) != count:
                raise ValueError(f"{count} entries announced, {len(entries)} found")
        except (IndexError, ValueError) as exc:
            raise LeaderEpochCheckpointError(
                f"{path} is not a leader-epoch checkpoint ({exc}); remove it and the "
                "replica rebuilds it from its log's batches") from None
        return cls(entries)


def diverging_epoch(leader: LeaderEpochCache, leader_log_end: int, fetch_offset: int,
                    last_fetched_epoch: int) -> tuple[int, int] | None:
    """Fetch v12's check on the leader: None if the follower's log up to ``fetch_offset``
    (whose last batch has ``last_fetched_epoch``) agrees with the leader's, else the
    ``(epoch, end_offset)`` to send back as DivergingEpoch; the follower truncates to that
    end offset (or less, if its own log ends that epoch earlier) and fetches again."""
    if last_fetched_epoch < 0:
        return None
    epoch, end = leader.end_offset_for(last_fetched_epoch, leader_log_end)
    if epoch == UNDEFINED:
        return (UNDEFINED, UNDEFINED) if fetch_offset > 0 else None
    if epoch < last_fetched_epoch or end < fetch_offset:
        return epoch, end
    return None


def truncation_offset(follower: LeaderEpochCache, follower_log_end: int,
                      diverging: tuple[int, int]) -> int:
    """Where a follower cuts its log after the leader answered DivergingEpoch
    ``(epoch, end_offset)``: at the leader's end of that epoch, or earlier if the
    follower's own log ends that epoch sooner (Kafka's KIP-279 rule, which also covers
    several failovers in a row); 0 when the leader knows no common epoch."""
    epoch, leader_end = diverging
    if epoch == UNDEFINED:
        return 0
    own_epoch, own_end = follower.end_offset_for(epoch, follower_log_end)
    if own_epoch == UNDEFINED:
        return 0
    # own_epoch < epoch: the follower never had that epoch, and its own end of the one
    # before is where the two logs last agreed; either way the smaller end is safe.
    return min(own_end, leader_end, follower_log_end)
