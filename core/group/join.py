"""JoinGroup: new dynamic and static members, rejoins, and static member replacement."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from core.group.api import JoinGroupRequest, JoinGroupResponse, SyncGroupResponse
from core.group.codes import ErrorCode
from core.group.group import Group, GroupState
from core.group.member import JoinCallback, Member
from core.group.rebalance import (
    Context,
    maybe_prepare_rebalance,
    prepare_rebalance,
    remove_pending_member,
    try_complete_join,
)

__all__ = ["handle_join"]

log = logging.getLogger(__name__)


def handle_join(groups: dict[str, Group], req: JoinGroupRequest, callback: JoinCallback,
                ctx: Context) -> None:
    """Kafka's handleJoinGroup after the coordinator-level checks (group id, loading,
    session timeout bounds). The answer goes to ``ctx.out``, now or when the rebalance
    completes."""
    new_member = req.member_id == ""
    group = groups.get(req.group_id)
    created = False
    if group is None:
        if not new_member:
            # A member id the coordinator never issued, or of a group since deleted.
            _reply(ctx, callback, ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            return
        group = groups[req.group_id] = Group(req.group_id, ctx.now_ms)
        created = True
    protocols = _unique(req.protocols)
    if not _accept_joining_member(group, req, ctx.config.max_size):
        log.info("group %s is full (%d members); rejecting %s", group.group_id,
                 len(group.members), req.member_id or req.client_id)
        if req.member_id in group.pending_members:
            remove_pending_member(group, req.member_id, ctx)
        _reply(ctx, callback, ErrorCode.GROUP_MAX_SIZE_REACHED, req.member_id)
    elif new_member:
        _join_new_member(group, req, protocols, callback, ctx)
    else:
        _join_known_member(group, req, protocols, callback, ctx)
    if group.state is GroupState.PREPARING_REBALANCE:
        try_complete_join(group, ctx)
    if created and group.is_unused:
        # A rejected first join leaves nothing worth listing.
        del groups[req.group_id]


def _reply(ctx: Context, callback: JoinCallback, error: int, member_id: str) -> None:
    ctx.out.add(callback, JoinGroupResponse(error, member_id=member_id))


def _unique(protocols: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The protocols in order with repeated names dropped (the first one counts)."""
    seen: set[str] = set()
    result = []
    for name, metadata in protocols:
        if name not in seen:
            seen.add(name)
            result.append((name, bytes(metadata)))
    return result


def _accept_joining_member(group: Group, req: JoinGroupRequest, max_size: int) -> bool:
    """group.max.size, counted as Kafka does: existing members always get back in."""
    if group.state in (GroupState.EMPTY, GroupState.DEAD):
        return True
    member = group.members.get(req.member_id)
    if member is None and req.group_instance_id is not None:
        # A static member's new incarnation replaces its old member id: it adds no one.
        member_id = group.static_members.get(req.group_instance_id)
        member = group.members.get(member_id) if member_id is not None else None
    if group.state is GroupState.PREPARING_REBALANCE:
        return (member is not None and member.awaiting_join) or (
            group.awaiting_join_count() < max_size)
    return member is not None or len(group.members) < max_size


def _join_new_member(group: Group, req: JoinGroupRequest, protocols: list[tuple[str, bytes]],
                     callback: JoinCallback, ctx: Context) -> None:
    instance_id = req.group_instance_id
    old_id = group.static_members.get(instance_id) if instance_id is not None else None
    names = {name for name, _ in protocols}
    if not group.supports_protocols(req.protocol_type, names, excluding=old_id):
        _reply(ctx, callback, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        return
    # Kafka's member id format: the client id (the instance id for a static member), a
    # dash and a random UUID.
    new_id = f"{instance_id if instance_id is not None else req.client_id}-{uuid.uuid4()}"
    if old_id is not None:
        _replace_static_member(group, req, protocols, old_id, new_id, callback, ctx)
    elif instance_id is None and req.require_known_member_id:
        # KIP-394: hand out the id first, so that a client that times out and retries
        # comes back as the same member instead of leaving a defunct one behind.
        group.pending_members[new_id] = ctx.now_ms + req.session_timeout_ms
        log.debug("group %s: new member %s must rejoin with its id", group.group_id, new_id)
        _reply(ctx, callback, ErrorCode.MEMBER_ID_REQUIRED, new_id)
    else:
        _add_member_and_rebalance(group, req, protocols, new_id, callback, ctx)


def _join_known_member(group: Group, req: JoinGroupRequest, protocols: list[tuple[str, bytes]],
                       callback: JoinCallback, ctx: Context) -> None:
    member_id = req.member_id
    names = {name for name, _ in protocols}
    if not group.supports_protocols(req.protocol_type, names, excluding=member_id):
        _reply(ctx, callback, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        return
    if member_id in group.pending_members:
        _add_member_and_rebalance(group, req, protocols, member_id, callback, ctx)
        return
    instance_id = req.group_instance_id
    if group.is_static_member_fenced(instance_id, member_id):
        log.debug("group %s: member %s of instance %s was replaced; fencing it",
                  group.group_id, member_id, instance_id)
        _reply(ctx, callback, ErrorCode.FENCED_INSTANCE_ID, member_id)
        return
    member = group.members.get(member_id)
    if member is None or (instance_id is not None and instance_id not in group.static_members):
        _reply(ctx, callback, ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        return
    if not member.is_new:
        # A new member's first join keeps its longer join deadline until answered.
        member.touch(ctx.now_ms)
    state = group.state
    if state is GroupState.PREPARING_REBALANCE:
        _update_member_and_rebalance(group, member, req, protocols, callback, ctx,
                                     f"member {member_id} joining group during {state}")
    elif state is GroupState.COMPLETING_REBALANCE:
        if member.matches(protocols):
            # The member lost the JoinGroup answer: send this generation's again.
            _reply_current(group, member, callback, ctx, with_members=True)
        else:
            _update_member_and_rebalance(group, member, req, protocols, callback, ctx,
                                         f"updating metadata for member {member_id} "
                                         f"during {state}")
    elif state is GroupState.STABLE:
        if member_id == group.leader_id:
            # A leader's rejoin asks for a new assignment (its clients do this when topic
            # metadata changes without any member's metadata changing).
            _update_member_and_rebalance(group, member, req, protocols, callback, ctx,
                                         f"leader {member_id} re-joining group during {state}")
        elif not member.matches(protocols):
            _update_member_and_rebalance(group, member, req, protocols, callback, ctx,
                                         f"updating metadata for member {member_id} "
                                         f"during {state}")
        else:
            _reply_current(group, member, callback, ctx, with_members=False)
    else:
        _reply(ctx, callback, ErrorCode.UNKNOWN_MEMBER_ID, member_id)


def _reply_current(group: Group, member: Member, callback: JoinCallback, ctx: Context, *,
                   with_members: bool) -> None:
    is_leader = member.member_id == group.leader_id
    ctx.out.add(callback, JoinGroupResponse(
        ErrorCode.NONE, group.generation_id, group.protocol_type, group.protocol_name,
        group.leader_id or "", member.member_id,
        group.member_list() if with_members and is_leader else []))


def _add_member_and_rebalance(group: Group, req: JoinGroupRequest,
                              protocols: list[tuple[str, bytes]], member_id: str,
                              callback: JoinCallback, ctx: Context) -> None:
    member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                    req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                    protocols, join_callback=callback, is_new=True,
                    heartbeat_deadline_ms=ctx.now_ms + ctx.config.new_member_join_timeout_ms)
    if (group.state is GroupState.PREPARING_REBALANCE
            and group.initial_delay_remaining_ms is not None):
        group.new_member_added = True
    group.add(member)
    log.debug("group %s: adding member %s (instance %s, client %s)", group.group_id,
              member_id, req.group_instance_id, req.client_id)
    maybe_prepare_rebalance(group, ctx, f"adding new member {member_id}")


def _update_member_and_rebalance(group: Group, member: Member, req: JoinGroupRequest,
                                 protocols: list[tuple[str, bytes]], callback: JoinCallback,
                                 ctx: Context, reason: str) -> None:
    _update_member(group, member, req, protocols, callback, ctx)
    maybe_prepare_rebalance(group, ctx, reason)


def _update_member(group: Group, member: Member, req: JoinGroupRequest,
                   protocols: list[tuple[str, bytes]], callback: JoinCallback,
                   ctx: Context) -> None:
    group.update_protocols(member, protocols)
    member.rebalance_timeout_ms = req.rebalance_timeout_ms
    member.session_timeout_ms = req.session_timeout_ms
    # A retried JoinGroup supersedes the earlier one; its caller (if still waiting) is told
    # to rejoin rather than being left without an answer.
    ctx.out.join(member, JoinGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS,
                                           member_id=member.member_id))
    member.join_callback = callback


def _replace_static_member(group: Group, req: JoinGroupRequest,
                           protocols: list[tuple[str, bytes]], old_id: str, new_id: str,
                           callback: JoinCallback, ctx: Context) -> None:
    """KIP-345: a restarted static member takes over its instance's membership under a
    new member id; the old id is fenced from now on."""
    instance_id = req.group_instance_id
    assert instance_id is not None
    old = group.members[old_id]
    unchanged = old.matches(protocols)
    ctx.out.join(old, JoinGroupResponse(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
    ctx.out.sync(old, SyncGroupResponse(ErrorCode.FENCED_INSTANCE_ID))
    previous_leader = group.leader_id
    member = group.replace_static_member(instance_id, old_id, new_id)
    member.is_new = False  # a known instance: its waiting join keeps it alive, as any rejoin
    member.touch(ctx.now_ms)
    _update_member(group, member, req, protocols, callback, ctx)
    log.debug("group %s: static member %s replaced %s as %s", group.group_id, instance_id,
              old_id, new_id)
    if group.state is GroupState.STABLE:
        if unchanged and group.select_protocol() == group.protocol_name \
                and ctx.writer.store(group) == ErrorCode.NONE:
            # No rebalance: the member keeps its assignment, which its SyncGroup returns;
            # the stored generation names the new member id, so a restart keeps it. (If
            # that record cannot be written, a rebalance writes a new generation instead.)
            # The old leader id is reported so that a replaced leader does not compute an
            # assignment a Stable group would never distribute.
            ctx.out.join(member, JoinGroupResponse(
                ErrorCode.NONE, group.generation_id, group.protocol_type,
                group.protocol_name, previous_leader or "", new_id, []))
        else:
            # Kafka rebalances only when the selected protocol would change; a changed
            # subscription must be reassigned too, so Ferry also rebalances on that.
            prepare_rebalance(group, ctx, f"static member {instance_id} rejoined with "
                                          "changed protocols")
    elif group.state is GroupState.COMPLETING_REBALANCE:
        # The leader may be computing an assignment for the old member id.
        prepare_rebalance(group, ctx, f"static member {instance_id} rejoined during "
                                      "CompletingRebalance")
