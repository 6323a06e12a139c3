"""The source offset: where in the WAL the last emitted record came from, stored as
Debezium stores it, and the rule that skips what was already emitted on resume.

Changes arrive in commit order, so the position of an event is (the commit LSN of the
last fully emitted transaction, the transaction in progress, the event's LSN, how many
events at that LSN were emitted). On resume the server resends whole transactions from
the slot's confirmed LSN; ``Position.skips`` drops those already emitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Position", "SnapshotState"]


@dataclass(frozen=True, slots=True)
class SnapshotState:
    """Offset fields of snapshot records (Debezium's ``snapshot``,
    ``last_snapshot_record``, ``snapshot_completed``)."""

    lsn: int  # the slot's consistent point, where streaming starts
    tx_id: int | None
    completed: bool


@dataclass(frozen=True, slots=True)
class Position:
    lsn_commit: int | None  # commit LSN of the last transaction fully emitted
    tx_id: int | None  # the transaction of the last emitted event, if not complete
    lsn: int | None  # that event's LSN
    events_at_lsn: int  # events emitted at that LSN (deletes and tombstones count once)
    ts_usec: int | None = None
    snapshot: SnapshotState | None = None

    @staticmethod
    def from_offset(offset: Mapping[str, Any] | None) -> Position | None:
        if not offset:
            return None
        snapshot = None
        if offset.get("snapshot") and not offset.get("streaming"):
            snapshot = SnapshotState(int(offset["lsn"]), offset.get("txId"),
                                     bool(offset.get("snapshot_completed")))
            return Position(None, None, None, 0, offset.get("ts_usec"), snapshot)
        lsn_commit = offset.get("lsn_commit")
        lsn = offset.get("lsn_proc", offset.get("lsn"))
        return Position(None if lsn_commit is None else int(lsn_commit), offset.get("txId"),
                        None if lsn is None else int(lsn),
                        int(offset.get("lsn_events_processed", 0) or 0),
                        offset.get("ts_usec"))

    def to_offset(self) -> dict[str, Any]:
        if self.snapshot is not None:
            return {"lsn": self.snapshot.lsn, "txId": self.snapshot.tx_id,
                    "ts_usec": self.ts_usec, "snapshot": "INITIAL",
                    "last_snapshot_record": self.snapshot.completed,
                    "snapshot_completed": self.snapshot.completed}
        out: dict[str, Any] = {"lsn_commit": self.lsn_commit, "lsn_proc": self.lsn,
                               "lsn": self.lsn, "txId": self.tx_id, "ts_usec": self.ts_usec}
        if self.events_at_lsn:
            out["lsn_events_processed"] = self.events_at_lsn
        return out

    @property
    def stream_start(self) -> int:
        """Where streaming resumes: the slot's confirmed position is never later."""
        if self.snapshot is not None:
            return self.snapshot.lsn
        return self.lsn_commit or 0

    def skips_transaction(self, commit_lsn: int) -> bool:
        return self.lsn_commit is not None and commit_lsn <= self.lsn_commit

    def skips_event(self, tx_id: int, lsn: int, index_at_lsn: int) -> bool:
        """Whether the ``index_at_lsn``-th (1-based) event at ``lsn`` of transaction
        ``tx_id`` was emitted already."""
        if self.tx_id != tx_id or self.lsn is None:
            return False
        return lsn < self.lsn or (lsn == self.lsn and index_at_lsn <= self.events_at_lsn)
