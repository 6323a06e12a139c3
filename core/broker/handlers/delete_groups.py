"""DeleteGroups (key 42) v0-2: delete Empty groups and their committed offsets."""

from __future__ import annotations

from kafka.protocol.admin.groups import DeleteGroupsRequest, DeleteGroupsResponse

from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed_names
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_delete_groups"]

_Result = DeleteGroupsResponse.DeletableGroupResult


@handles(DeleteGroupsRequest, versions=(0, 2))
async def handle_delete_groups(state: BrokerState, ctx: RequestContext) -> DeleteGroupsResponse:
    req = ctx.request
    version = ctx.api_version
    names = list(req.groups_names)
    # NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND for an unknown one.
    deletable = allowed_names(state, ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    results = state.coordinator.delete_groups(
        dict.fromkeys(n for n in names if n in deletable))
    for name in names:
        if name not in deletable:
            results[name] = ErrorCode.GROUP_AUTHORIZATION_FAILED
    return DeleteGroupsResponse(version=version, throttle_time_ms=0, results=[
        _Result(version=version, group_id=name, error_code=int(results[name]))
        for name in dict.fromkeys(names)])
