"""ListGroups (key 16) v0-4: every group with its protocol type; v4 filters by state."""

from __future__ import annotations

from kafka.protocol.admin.groups import ListGroupsRequest, ListGroupsResponse

from core.broker.registry import handles
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    allowed_names,
    cluster_allowed,
)
from core.broker.state import BrokerState, RequestContext
from core.group import CoordinatorError
from core.protocol.errors import ErrorCode

__all__ = ["handle_list_groups"]

_Listed = ListGroupsResponse.ListedGroup


@handles(ListGroupsRequest, versions=(0, 4))
async def handle_list_groups(state: BrokerState, ctx: RequestContext) -> ListGroupsResponse:
    req = ctx.request
    version = ctx.api_version
    try:
        groups = state.coordinator.list_groups()
    except CoordinatorError as exc:
        return ListGroupsResponse(version=version, throttle_time_ms=0,
                                  error_code=exc.error_code, groups=[])
    # KIP-518: an empty filter means every state. Clients send Kafka's spelling
    # ("Stable"); matching ignores case, as the admin clients' parsers do.
    wanted = {s.lower() for s in req.states_filter or ()} if version >= 4 else set()
    if not cluster_allowed(state, ctx, AclOperation.DESCRIBE):
        # Without DESCRIBE on the cluster, only the groups the caller may describe.
        visible = allowed_names(state, ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                [g[0] for g in groups])
        groups = [g for g in groups if g[0] in visible]
    return ListGroupsResponse(version=version, throttle_time_ms=0, error_code=ErrorCode.NONE,
                              groups=[_Listed(version=version, group_id=group_id,
                                              protocol_type=protocol_type, group_state=state_)
                                      for group_id, protocol_type, state_ in groups
                                      if not wanted or state_.lower() in wanted])
