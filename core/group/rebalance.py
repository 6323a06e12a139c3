"""The rebalance state machine: preparing, completing, propagating and expiring, per group.

These functions are Kafka's GroupCoordinator transitions with its purgatories replaced by
deadlines on the Group that ``expire`` checks on every tick. The caller holds the
coordinator's lock; responses go into ``ctx.out`` and are delivered after it is released.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from core.group.api import JoinGroupResponse, SyncGroupResponse
from core.group.codes import ErrorCode
from core.group.config import CoordinatorConfig
from core.group.group import Group, GroupState
from core.group.member import Member
from core.group.outbox import Outbox
from core.group.persistence import GroupWriter

__all__ = [
    "Context",
    "complete_join",
    "evict",
    "expire",
    "maybe_prepare_rebalance",
    "prepare_rebalance",
    "propagate_assignment",
    "remove_member",
    "remove_pending_member",
    "try_complete_join",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Context:
    """What one coordinator operation works with: settings, its time, its outbox, and the
    writer that stores group metadata (by default nowhere)."""

    config: CoordinatorConfig
    now_ms: int
    out: Outbox
    writer: GroupWriter = field(default_factory=lambda: GroupWriter(None))


def maybe_prepare_rebalance(group: Group, ctx: Context, reason: str) -> None:
    if group.can_rebalance:
        prepare_rebalance(group, ctx, reason)


def prepare_rebalance(group: Group, ctx: Context, reason: str) -> None:
    """Enter PreparingRebalance: members must rejoin within the rebalance timeout.

    An Empty group first waits ``group.initial.rebalance.delay.ms`` so that consumers
    starting together land in one generation instead of one rebalance each.
    """
    if group.state is GroupState.COMPLETING_REBALANCE:
        _reset_and_propagate_error(group, ctx, ErrorCode.REBALANCE_IN_PROGRESS)
    group.sync_deadline_ms = None
    if group.state is GroupState.EMPTY:
        delay = ctx.config.initial_rebalance_delay_ms
        group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
        group.new_member_added = False
        group.join_deadline_ms = ctx.now_ms + delay
    else:
        group.initial_delay_remaining_ms = None
        group.join_deadline_ms = ctx.now_ms + group.rebalance_timeout_ms
    log.debug("Preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
              group.group_id, group.state, group.generation_id, reason)
    group.transition(GroupState.PREPARING_REBALANCE, ctx.now_ms)
    # A zero initial delay (the embedded backend's choice) completes at once.
    _check_join_deadline(group, ctx)
    try_complete_join(group, ctx)


def try_complete_join(group: Group, ctx: Context) -> None:
    """Complete the join phase early once every member has rejoined. The initial delay of a
    new group always runs out, as Kafka's InitialDelayedJoin does."""
    if (group.state is GroupState.PREPARING_REBALANCE
            and group.initial_delay_remaining_ms is None
            and group.has_all_members_joined):
        complete_join(group, ctx)


def complete_join(group: Group, ctx: Context) -> None:
    """End the join phase: drop dynamic members that did not rejoin, start the next
    generation and answer every waiting JoinGroup (the leader's with the member list)."""
    for member in list(group.members.values()):
        if not member.awaiting_join and not member.is_static:
            log.debug("group %s: removing member %s, which did not rejoin within the "
                      "rebalance timeout", group.group_id, member.member_id)
            evict(group, member, ctx)
    group.join_deadline_ms = None
    group.initial_delay_remaining_ms = None
    if group.members and not group.elect_joined_leader():
        # Only static members that have not rejoined are left. Wait another rebalance
        # timeout; their sessions expire meanwhile unless they come back.
        log.warning("group %s could not complete its rebalance because no member rejoined",
                    group.group_id)
        group.join_deadline_ms = ctx.now_ms + group.rebalance_timeout_ms
        return
    group.init_next_generation(ctx.now_ms)
    if group.state is GroupState.EMPTY:
        log.info("group %s with generation %d is now empty", group.group_id,
                 group.generation_id)
        # Kafka stores the Empty generation too (errors are logged by the writer): a
        # restart then brings the group back Empty rather than with its old members.
        ctx.writer.store(group)
        return
    log.debug("group %s: generation %d joined with %d members (protocol %s); waiting for "
              "the leader's assignment", group.group_id, group.generation_id,
              len(group.members), group.protocol_name)
    everyone = group.member_list()
    for member in group.members.values():
        ctx.out.join(member, JoinGroupResponse(
            ErrorCode.NONE, group.generation_id, group.protocol_type, group.protocol_name,
            group.leader_id or "", member.member_id,
            everyone if member.member_id == group.leader_id else []))
        member.touch(ctx.now_ms)
        member.is_new = False
        group.pending_sync.add(member.member_id)
    group.sync_deadline_ms = ctx.now_ms + group.rebalance_timeout_ms


def propagate_assignment(group: Group, ctx: Context, assignments: dict[str, bytes]) -> None:
    """Store the leader's assignment (in memory and, with the generation, in the group
    metadata record), answer every waiting SyncGroup, and become Stable. A member the
    leader left out gets ``b""``; ids that are not members are ignored. If the record
    cannot be written, every waiting SyncGroup gets the error and the group rebalances,
    as Kafka's doSyncGroup does."""
    missing = [m for m in group.members if m not in assignments]
    if missing:
        log.warning("group %s: the leader's assignment for generation %d has nothing for "
                    "members %s; they get an empty one", group.group_id,
                    group.generation_id, missing)
    for member in group.members.values():
        member.assignment = assignments.get(member.member_id, b"")
    error = ctx.writer.store(group)
    if error != ErrorCode.NONE:
        _reset_and_propagate_error(group, ctx, error)
        prepare_rebalance(group, ctx, "error when storing the group assignment")
        return
    _propagate(group, ctx, ErrorCode.NONE)
    group.transition(GroupState.STABLE, ctx.now_ms)
    log.info("Stabilized group %s generation %d with %d members (protocol %s, leader %s)",
             group.group_id, group.generation_id, len(group.members), group.protocol_name,
             group.leader_id)


def _reset_and_propagate_error(group: Group, ctx: Context, error: int) -> None:
    for member in group.members.values():
        member.assignment = b""
    _propagate(group, ctx, error)


def _propagate(group: Group, ctx: Context, error: int) -> None:
    for member in group.members.values():
        response = SyncGroupResponse(error, group.protocol_type, group.protocol_name,
                                     member.assignment)
        if ctx.out.sync(member, response):
            member.touch(ctx.now_ms)


def evict(group: Group, member: Member, ctx: Context) -> None:
    """Take ``member`` out of the group, answering its waiting requests UNKNOWN_MEMBER_ID
    so that a client still there resets its member id and rejoins."""
    ctx.out.join(member, JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    ctx.out.sync(member, SyncGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID))
    group.remove(member.member_id)


def remove_member(group: Group, member: Member, ctx: Context, reason: str) -> None:
    """A member left or failed: remove it and rebalance the others (Kafka's
    removeMemberAndUpdateGroup)."""
    evict(group, member, ctx)
    if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(group, ctx, reason)
    elif group.state is GroupState.PREPARING_REBALANCE:
        try_complete_join(group, ctx)


def remove_pending_member(group: Group, member_id: str, ctx: Context) -> None:
    group.pending_members.pop(member_id, None)
    # A join phase waits for pending members too; this may have been the last one.
    try_complete_join(group, ctx)


def expire(group: Group, ctx: Context) -> None:
    """Apply every deadline that has passed: pending members and sessions, the join phase
    (initial delay or rebalance timeout) and the SyncGroup deadline."""
    now = ctx.now_ms
    for member_id, deadline in list(group.pending_members.items()):
        if now >= deadline:
            log.debug("group %s: pending member %s did not rejoin within its session "
                      "timeout; forgetting it", group.group_id, member_id)
            remove_pending_member(group, member_id, ctx)
    for member in list(group.members.values()):
        if group.members.get(member.member_id) is member and member.session_expired(now):
            log.debug("group %s: member %s has failed (no heartbeat within %d ms); removing "
                      "it from the group", group.group_id, member.member_id,
                      member.session_timeout_ms)
            remove_member(group, member, ctx,
                          f"removing member {member.member_id} on heartbeat expiration")
    _check_join_deadline(group, ctx)
    _check_sync_deadline(group, ctx)


def _check_join_deadline(group: Group, ctx: Context) -> None:
    deadline = group.join_deadline_ms
    if (group.state is not GroupState.PREPARING_REBALANCE or deadline is None
            or ctx.now_ms < deadline):
        return
    remaining = group.initial_delay_remaining_ms
    if remaining is not None and remaining > 0 and group.new_member_added:
        # Members kept arriving during the initial delay: wait once more, within budget.
        delay = min(ctx.config.initial_rebalance_delay_ms, remaining)
        group.new_member_added = False
        group.initial_delay_remaining_ms = remaining - delay
        group.join_deadline_ms = ctx.now_ms + delay
        return
    complete_join(group, ctx)


def _check_sync_deadline(group: Group, ctx: Context) -> None:
    deadline = group.sync_deadline_ms
    if (group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
            or deadline is None or ctx.now_ms < deadline):
        return
    group.sync_deadline_ms = None
    if not group.pending_sync:
        return
    # Without this, followers would wait forever for a leader that joined but never syncs
    # (its heartbeats alone keep it a member).
    laggards = sorted(group.pending_sync)
    for member_id in laggards:
        member = group.members.get(member_id)
        if member is not None:
            evict(group, member, ctx)
    log.debug("group %s: removed members %s, which did not send SyncGroup within the "
              "rebalance timeout", group.group_id, laggards)
    prepare_rebalance(group, ctx, f"removing {laggards} on pending sync expiration")
