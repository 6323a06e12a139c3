"""LeaveGroup (key 13) v0-4: one member (v0-2) or a batch of members (v3+, KIP-345)."""

from __future__ import annotations

from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse

from core.broker.registry import handles
from core.broker.replication.groups import coordinator_error
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_leave_group"]


@handles(LeaveGroupRequest, versions=(0, 4))
async def handle_leave_group(state: BrokerState, ctx: RequestContext) -> LeaveGroupResponse:
    req = ctx.request
    version = ctx.api_version
    if not allowed(state, ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return LeaveGroupResponse(version=version, throttle_time_ms=0,
                                  error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[])
    if version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in req.members or ()]
    else:
        members = [(req.member_id, None)]
    refused = coordinator_error(state.replicas, req.group_id)
    if refused is not None:
        return LeaveGroupResponse(version=version, throttle_time_ms=0,
                                  error_code=int(refused), members=[])
    error, member_errors = state.coordinator.leave_group(req.group_id, members)
    if version < 3:
        # One member and no per-member list: its error is the answer, as in Kafka.
        if error == ErrorCode.NONE and member_errors:
            error = member_errors[0]
        return LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=int(error))
    # A top-level error (an invalid group id, say) comes without per-member results.
    results = zip(members, member_errors, strict=True) if member_errors else ()
    return LeaveGroupResponse(
        version=version, throttle_time_ms=0, error_code=int(error),
        members=[LeaveGroupResponse.MemberResponse(
            version=version, member_id=member_id, group_instance_id=instance_id,
            error_code=int(code)) for (member_id, instance_id), code in results])
