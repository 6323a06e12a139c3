"""SyncGroup (key 14) v0-5: the leader hands out assignments; every member gets its own."""

from __future__ import annotations

from kafka.protocol.consumer.group import SyncGroupRequest, SyncGroupResponse

from core.broker.group_bridge import sync_group
from core.broker.registry import handles
from core.broker.replication.groups import coordinator_error
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.group import SyncGroupRequest as CoordinatorSyncRequest
from core.protocol.errors import ErrorCode

__all__ = ["handle_sync_group"]


@handles(SyncGroupRequest, versions=(0, 5))
async def handle_sync_group(state: BrokerState, ctx: RequestContext) -> SyncGroupResponse:
    req = ctx.request
    version = ctx.api_version
    if not allowed(state, ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return SyncGroupResponse(
            version=version, throttle_time_ms=0,
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, protocol_type=None,
            protocol_name=None, assignment=b"")
    refused = coordinator_error(state.replicas, req.group_id)
    if refused is not None:
        return SyncGroupResponse(version=version, throttle_time_ms=0,
                                 error_code=int(refused), protocol_type=None,
                                 protocol_name=None, assignment=b"")
    assignments: dict[str, bytes] = {}
    for a in req.assignments or ():
        assignments[a.member_id] = bytes(a.assignment)
    result = await sync_group(state.coordinator, state.loop, CoordinatorSyncRequest(
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id if version >= 3 else None,
        # v5 (KIP-559): the coordinator checks these against the group's when present.
        protocol_type=req.protocol_type if version >= 5 else None,
        protocol_name=req.protocol_name if version >= 5 else None,
        assignments=assignments,
    ))
    return SyncGroupResponse(
        version=version, throttle_time_ms=0, error_code=result.error_code,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name,
        assignment=result.assignment)
