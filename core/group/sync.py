"""SyncGroup: followers wait for the leader's assignment, which is then handed out."""

from __future__ import annotations

import logging

from core.group.api import SyncGroupRequest, SyncGroupResponse
from core.group.codes import ErrorCode
from core.group.group import Group, GroupState
from core.group.member import SyncCallback
from core.group.rebalance import Context, propagate_assignment

__all__ = ["handle_sync"]

log = logging.getLogger(__name__)


def handle_sync(groups: dict[str, Group], req: SyncGroupRequest, callback: SyncCallback,
                ctx: Context) -> None:
    """Kafka's doSyncGroup. In CompletingRebalance the answer waits for the leader's
    SyncGroup (or a new rebalance, which answers REBALANCE_IN_PROGRESS); otherwise it is
    immediate."""
    group = groups.get(req.group_id)
    error = _check(group, req)
    if error is not None:
        ctx.out.add(callback, SyncGroupResponse(error))
        return
    assert group is not None
    member = group.members[req.member_id]
    group.pending_sync.discard(member.member_id)
    if not group.pending_sync:
        group.sync_deadline_ms = None
    if group.state is GroupState.STABLE:
        member.touch(ctx.now_ms)
        ctx.out.add(callback, SyncGroupResponse(ErrorCode.NONE, group.protocol_type,
                                                group.protocol_name, member.assignment))
        return
    # CompletingRebalance. A repeated SyncGroup supersedes the earlier one, whose caller is
    # told to rejoin rather than left waiting.
    ctx.out.sync(member, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    member.sync_callback = callback
    if member.member_id == group.leader_id:
        log.debug("group %s: assignment received from leader %s for generation %d "
                  "(%d members, %d static)", group.group_id, member.member_id,
                  group.generation_id, len(group.members), len(group.static_members))
        propagate_assignment(group, ctx, dict(req.assignments))


def _check(group: Group | None, req: SyncGroupRequest) -> int | None:
    """The error a SyncGroup gets before any state change, in Kafka's order, or None."""
    if group is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.is_static_member_fenced(req.group_instance_id, req.member_id):
        return ErrorCode.FENCED_INSTANCE_ID
    if req.member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if req.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if req.protocol_type is not None and req.protocol_type != group.protocol_type:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if req.protocol_name is not None and req.protocol_name != group.protocol_name:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if group.state is GroupState.PREPARING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    if group.state is GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return None
