"""Heartbeat (key 12) v0-4: keep a member's session alive; learn of a rebalance."""

from __future__ import annotations

from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse

from core.broker.registry import handles
from core.broker.replication.groups import coordinator_error
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_heartbeat"]


@handles(HeartbeatRequest, versions=(0, 4))
async def handle_heartbeat(state: BrokerState, ctx: RequestContext) -> HeartbeatResponse:
    req = ctx.request
    if not allowed(state, ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return HeartbeatResponse(version=ctx.api_version, throttle_time_ms=0,
                                 error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    version = ctx.api_version
    refused = coordinator_error(state.replicas, req.group_id)
    if refused is not None:
        return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=int(refused))
    error = state.coordinator.heartbeat(
        req.group_id, req.generation_id, req.member_id,
        req.group_instance_id if version >= 3 else None)
    return HeartbeatResponse(version=version, throttle_time_ms=0, error_code=int(error))
