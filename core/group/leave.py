"""LeaveGroup: members leave by member id, or are removed by group instance id."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core.group.codes import ErrorCode
from core.group.group import Group
from core.group.rebalance import Context, remove_member, remove_pending_member

__all__ = ["handle_leave"]

log = logging.getLogger(__name__)


def handle_leave(group: Group | None, members: Sequence[tuple[str, str | None]],
                 ctx: Context) -> tuple[int, list[int]]:
    """Kafka's handleLeaveGroup: ``members`` are ``(member_id, group_instance_id)``; an
    empty member id with an instance id removes that static member (the admin path).
    Returns the top-level error and one error per member, in order."""
    if group is None:
        return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
    return ErrorCode.NONE, [_leave_one(group, member_id, instance_id, ctx)
                            for member_id, instance_id in members]


def _leave_one(group: Group, member_id: str, instance_id: str | None, ctx: Context) -> int:
    if member_id == "":
        current = group.static_members.get(instance_id) if instance_id is not None else None
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member_id = current
    elif member_id in group.pending_members:
        log.debug("group %s: pending member %s left", group.group_id, member_id)
        remove_pending_member(group, member_id, ctx)
        return ErrorCode.NONE
    elif group.is_static_member_fenced(instance_id, member_id):
        return ErrorCode.FENCED_INSTANCE_ID
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    log.debug("group %s: member %s (instance %s) left", group.group_id, member_id,
              member.group_instance_id)
    remove_member(group, member, ctx, f"member {member_id} left the group")
    return ErrorCode.NONE
