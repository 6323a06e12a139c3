"""JoinGroup (key 11) v2-7: join a classic group and wait for the rebalance to complete."""

from __future__ import annotations

import logging

from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse

from core.broker.group_bridge import client_host, join_group
from core.broker.registry import handles
from core.broker.replication.groups import coordinator_error
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.group import JoinGroupRequest as CoordinatorJoinRequest
from core.protocol.errors import ErrorCode

__all__ = ["handle_join_group"]

log = logging.getLogger(__name__)


@handles(JoinGroupRequest, versions=(2, 7))
async def handle_join_group(state: BrokerState, ctx: RequestContext) -> JoinGroupResponse:
    req = ctx.request
    version = ctx.api_version
    if not allowed(state, ctx, AclOperation.READ, ResourceType.GROUP, req.group_id):
        return JoinGroupResponse(
            version=version, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            generation_id=-1, protocol_type=None, protocol_name=None if version >= 7 else "",
            leader="", member_id=req.member_id, members=[])
    refused = coordinator_error(state.replicas, req.group_id)
    if refused is not None:  # as Kafka's joinError: no generation, leader or members
        return JoinGroupResponse(
            version=version, throttle_time_ms=0, error_code=int(refused), generation_id=-1,
            protocol_type=None, protocol_name=None if version >= 7 else "", leader="",
            member_id=req.member_id, members=[])
    result = await join_group(state.coordinator, state.loop, CoordinatorJoinRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id if version >= 5 else None,
        protocol_type=req.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        client_id=ctx.client_id or "",
        client_host=client_host(ctx.client_host),
        # KIP-394: from v4 a new member first gets its id with MEMBER_ID_REQUIRED.
        require_known_member_id=version >= 4,
    ))
    members = [JoinGroupResponse.JoinGroupResponseMember(
        version=version, member_id=m.member_id, group_instance_id=m.group_instance_id,
        metadata=m.metadata) for m in result.members]
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""  # nullable only from v7 (KIP-559)
    return JoinGroupResponse(
        version=version, throttle_time_ms=0, error_code=result.error_code,
        generation_id=result.generation_id, protocol_type=result.protocol_type,
        protocol_name=protocol_name, leader=result.leader_id, member_id=result.member_id,
        members=members)
