"""Heartbeat: keeps a member's session alive and tells it when to rejoin."""

from __future__ import annotations

from core.group.codes import ErrorCode
from core.group.group import Group, GroupState

__all__ = ["handle_heartbeat"]


def handle_heartbeat(group: Group | None, generation_id: int, member_id: str,
                     group_instance_id: str | None, now_ms: int) -> int:
    """Kafka's handleHeartbeat: NONE while CompletingRebalance or Stable,
    REBALANCE_IN_PROGRESS while PreparingRebalance (the member must rejoin)."""
    if group is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.is_static_member_fenced(group_instance_id, member_id):
        return ErrorCode.FENCED_INSTANCE_ID
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if group.state is GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not member.is_new:
        member.touch(now_ms)
    if group.state is GroupState.PREPARING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE
