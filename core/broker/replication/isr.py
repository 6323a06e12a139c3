"""A partition leader's view of its replicas: follower log ends, the in-sync replica set,
the high watermark and acks=all (Kafka's ``Partition``), sans I/O.

* The ISR is what the controller committed; a change the leader asked for (AlterPartition)
  is pending until the committed metadata shows it, one at a time. Until then the leader
  uses the *maximal* ISR: the committed ISR plus a pending addition (so acks=all waits for
  the newcomer at once) and without a pending removal (so a shrink never speeds acks up
  before it is committed).
* The high watermark is the smallest log end over the maximal ISR, never moves back, and
  does not move while the committed ISR is smaller than ``min.insync.replicas``.
* A follower is caught up at a fetch that reaches the leader's log end as it was at its
  previous fetch; one not caught up for ``replica.lag.time.max.ms`` is proposed for
  removal, and one out of the ISR whose log end reaches the high watermark (and the start
  of the leader's epoch) is proposed for addition.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AcksResult", "FollowerState", "IsrChange", "PartitionLeader"]


class AcksResult:
    NONE = 0
    PENDING = -1
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20


@dataclass
class FollowerState:
    log_end: int = 0
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    leader_end_at_last_fetch: int = 0


@dataclass(frozen=True)
class IsrChange:
    """An AlterPartition to send: the proposed ISR, against ``partition_epoch``."""

    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


@dataclass
class PartitionLeader:
    broker_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    epoch_start_offset: int
    log_end: int
    min_insync_replicas: int
    replica_lag_time_max_ms: int
    now_ms: int
    high_watermark: int = 0
    pending: IsrChange | None = None
    followers: dict[int, FollowerState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for replica in self.replicas:
            if replica != self.broker_id:
                # A new leader gives every follower a full lag window before judging it.
                self.followers.setdefault(replica, FollowerState(
                    last_caught_up_ms=self.now_ms, last_fetch_ms=self.now_ms))

    # -- the maximal ISR and the high watermark -------------------------------------------

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is None:
            return self.isr
        return tuple(sorted(set(self.isr) | set(self.pending.isr)))

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.min_insync_replicas

    def _log_end_of(self, replica: int) -> int:
        return self.log_end if replica == self.broker_id else self.followers[replica].log_end

    def _advance_high_watermark(self) -> bool:
        if self.under_min_isr:
            return False
        candidate = min(self._log_end_of(r) for r in self.maximal_isr)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    # -- events -----------------------------------------------------------------------------

    def appended(self, log_end: int) -> bool:
        """The leader appended up to ``log_end``; returns whether the HW moved (RF=1)."""
        self.log_end = log_end
        return self._advance_high_watermark()

    def check_before_append(self, acks: int) -> int:
        """NOT_ENOUGH_REPLICAS for acks=all when the ISR is smaller than the minimum."""
        if acks == -1 and self.under_min_isr:
            return AcksResult.NOT_ENOUGH_REPLICAS
        return AcksResult.NONE

    def acks_all_result(self, required_offset: int) -> int:
        """Kafka's ``checkEnoughReplicasReachOffset`` for a batch ending before
        ``required_offset``: NONE once the HW passed it with enough in-sync replicas,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if it passed with too few, else PENDING."""
        if self.high_watermark < required_offset:
            return AcksResult.PENDING
        if len(self.maximal_isr) >= self.min_insync_replicas:
            return AcksResult.NONE
        return AcksResult.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    def follower_fetched(self, replica: int, fetch_offset: int, now_ms: int
                         ) -> tuple[bool, IsrChange | None]:
        """A follower fetched from ``fetch_offset`` (so its log ends there). Returns
        whether the HW moved and an ISR expansion to propose, if any."""
        state = self.followers.get(replica)
        if state is None:
            return False, None
        if fetch_offset >= self.log_end:
            state.last_caught_up_ms = now_ms
        elif fetch_offset >= state.leader_end_at_last_fetch:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.leader_end_at_last_fetch = self.log_end
        state.last_fetch_ms = now_ms
        state.log_end = min(fetch_offset, self.log_end)
        moved = self._advance_high_watermark()
        change = None
        if (self.pending is None and replica not in self.isr
                and state.log_end >= self.high_watermark
                and state.log_end >= self.epoch_start_offset):
            change = self._propose(tuple(sorted((*self.isr, replica))))
        return moved, change

    def maybe_shrink(self, now_ms: int) -> IsrChange | None:
        """Propose removing followers not caught up for replica.lag.time.max.ms."""
        if self.pending is not None:
            return None
        lagging = {r for r in self.isr if r != self.broker_id and
                   now_ms - self.followers[r].last_caught_up_ms > self.replica_lag_time_max_ms}
        if not lagging:
            return None
        return self._propose(tuple(r for r in self.isr if r not in lagging))

    def _propose(self, isr: tuple[int, ...]) -> IsrChange:
        self.pending = IsrChange(isr, self.leader_epoch, self.partition_epoch)
        return self.pending

    def committed(self, isr: tuple[int, ...], leader_epoch: int, partition_epoch: int
                  ) -> bool:
        """The controller committed a change of this partition (the metadata log).
        Returns False when it makes this broker no longer the leader of this epoch: the
        caller drops this state and becomes a follower."""
        if leader_epoch != self.leader_epoch or self.broker_id not in isr:
            return False
        self.isr, self.partition_epoch, self.pending = tuple(isr), partition_epoch, None
        self._advance_high_watermark()
        return True

    def change_rejected(self) -> None:
        """AlterPartition failed (a stale partition epoch): wait for the metadata, retry."""
        self.pending = None
