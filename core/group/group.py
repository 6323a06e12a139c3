"""Per-group state of the classic protocol: members, protocols, generation and offsets."""

from __future__ import annotations

import logging
from collections import Counter
from enum import StrEnum

from core.group.api import CommittedOffset, JoinGroupMember, TopicPartitionKey
from core.group.errors import IllegalGroupStateError
from core.group.member import Member
from core.group.subscriptions import subscribed_topics

__all__ = ["Group", "GroupState"]

log = logging.getLogger(__name__)


class GroupState(StrEnum):
    """Kafka's classic group states, spelled as DescribeGroups and ListGroups report them."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

_REBALANCE_FROM = frozenset(
    {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE})


class Group:
    """One consumer group (or Connect cluster, or registry election): plain state and the
    bookkeeping invariants between its fields. Timers, callbacks and the decisions of the
    protocol live in core.group.rebalance; everything here is guarded by the coordinator's
    lock.
    """

    def __init__(self, group_id: str, now_ms: int):
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        # Fixed by the first member to join an Empty group; kept while Empty, for ListGroups.
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        # Insertion ordered: the oldest member takes over leadership when the leader leaves.
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group instance id -> member id
        # Member ids handed out with MEMBER_ID_REQUIRED, not yet joined -> expiry deadline.
        self.pending_members: dict[str, int] = {}
        # Members that got this generation's JoinGroup answer but have not sent SyncGroup.
        self.pending_sync: set[str] = set()
        # Latest time the join phase (PreparingRebalance) may last before it is completed.
        self.join_deadline_ms: int | None = None
        # Not None while an Empty group's initial rebalance delay runs: the budget left for
        # extensions (group.initial.rebalance.delay.ms, bounded by the rebalance timeout).
        self.initial_delay_remaining_ms: int | None = None
        self.new_member_added = False
        # Members still in pending_sync at this time are removed (Kafka's pending-sync timer).
        self.sync_deadline_ms: int | None = None
        self.offsets: dict[TopicPartitionKey, CommittedOffset] = {}
        # Topics the members of the current generation consume (consumer groups only;
        # None when unknown), fixed when a generation starts, as Kafka's subscribedTopics.
        self.subscribed_topics: frozenset[str] | None = None
        # How many members support each protocol name; a protocol with a count equal to the
        # group size is a candidate for selection.
        self._protocol_counts: Counter[str] = Counter()

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state}, generation={self.generation_id}, "
                f"members={len(self.members)})")

    # ------------------------------------------------------------------ state

    def transition(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalGroupStateError(
                f"group {self.group_id} cannot go from {self.state} to {state}")
        log.debug("group %s: %s -> %s", self.group_id, self.state, state)
        self.state = state
        self.state_timestamp_ms = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in _REBALANCE_FROM

    @property
    def is_unused(self) -> bool:
        """Nothing left to keep: no members, no pending members, no offsets."""
        return not (self.members or self.pending_members or self.offsets)

    @property
    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest of its members'."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ------------------------------------------------------------------ membership

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)
        self._protocol_counts.update(member.protocol_names)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._protocol_counts.subtract(member.protocol_names)
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_sync.discard(member_id)
        return member

    def update_protocols(self, member: Member, protocols: list[tuple[str, bytes]]) -> None:
        self._protocol_counts.subtract(member.protocol_names)
        member.set_protocols(protocols)
        self._protocol_counts.update(member.protocol_names)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Give the static member of ``instance_id`` the member id ``new_id``, keeping its
        assignment, leadership and pending sync. The caller fences the old id's waiting
        requests first."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        """A request naming a static instance under a member id that is no longer its own."""
        if instance_id is None:
            return False
        current = self.static_members.get(instance_id)
        return current is not None and current != member_id

    @property
    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.awaiting_join for m in self.members.values())

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    # ------------------------------------------------------------------ protocols

    def supports_protocols(self, protocol_type: str, names: set[str],
                           excluding: str | None = None) -> bool:
        """Whether a member with these protocols may join (Kafka's supportsProtocols).

        ``excluding`` is the member being updated or replaced: its current protocols do not
        count. Kafka counts them, which rejects a lone member that switches assignor; not
        counting them keeps the invariant that matters, a protocol common to all members.
        """
        if not protocol_type or not names:
            return False
        if self.state is GroupState.EMPTY:
            return True
        if protocol_type != self.protocol_type:
            return False
        others = len(self.members)
        counts = self._protocol_counts
        excluded = self.members.get(excluding) if excluding is not None else None
        if excluded is not None:
            others -= 1
        for name in names:
            count = counts[name]
            if excluded is not None and name in excluded.protocol_names:
                count -= 1
            if count == others:
                return True
        return False

    def select_protocol(self) -> str:
        """Kafka's selectProtocol: each member votes for its most preferred protocol that
        every member supports; the most votes win. Ties go to the protocol voted for first
        in member order (oldest member first), where Kafka's choice is unspecified."""
        size = len(self.members)
        candidates = {name for name, count in self._protocol_counts.items() if count == size}
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=votes.__getitem__)

    def member_list(self) -> list[JoinGroupMember]:
        """Every member with its metadata for the chosen protocol: the leader's view."""
        protocol = self.protocol_name or ""
        return [JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(protocol))
                for m in self.members.values()]

    # ------------------------------------------------------------------ generations

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else hand leadership to any member that did.
        False when no member rejoined (Kafka's maybeElectNewJoinedLeader)."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                log.debug("group %s: leader %s did not rejoin; %s leads now",
                          self.group_id, self.leader_id, member.member_id)
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        self.pending_sync.clear()
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(GroupState.EMPTY, now_ms)
        self.update_subscribed_topics()

    def update_subscribed_topics(self) -> None:
        protocol = self.protocol_name or ""
        self.subscribed_topics = subscribed_topics(
            self.group_id, self.protocol_type,
            (m.metadata(protocol) for m in self.members.values()))
