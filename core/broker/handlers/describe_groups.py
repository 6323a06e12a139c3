"""DescribeGroups (key 15) v0-5: state, protocol and members of each group."""

from __future__ import annotations

from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse

from core.broker.registry import handles
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    allowed,
    authorized_operations,
)
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["GROUP_OPERATIONS", "handle_describe_groups"]

_Group = DescribeGroupsResponse.DescribedGroup
_Member = _Group.DescribedGroupMember

#: Kafka's AclOperation codes allowed on a group: READ (3), DELETE (6), DESCRIBE (8).
#: Without an authorizer every client may do all of them, which is what Kafka reports.
GROUP_OPERATIONS = frozenset({3, 6, 8})


@handles(DescribeGroupsRequest, versions=(0, 5))
async def handle_describe_groups(state: BrokerState, ctx: RequestContext
                                 ) -> DescribeGroupsResponse:
    req = ctx.request
    version = ctx.api_version
    # v3+: operations only when asked for; None encodes Kafka's "not requested"
    # (Integer.MIN_VALUE).
    asked = version >= 3 and req.include_authorized_operations
    groups = []
    for group_id in req.groups:
        if not allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_Group(
                version=version, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                group_id=group_id, group_state="", protocol_type="", protocol_data="",
                authorized_operations=None, members=[]))
            continue
        operations = (set(authorized_operations(state, ctx, ResourceType.GROUP, group_id))
                      if asked else None)
        summary = state.coordinator.describe_group(group_id)
        groups.append(_Group(
            version=version, error_code=int(summary.error_code), group_id=summary.group_id,
            group_state=summary.state, protocol_type=summary.protocol_type,
            protocol_data=summary.protocol_name, authorized_operations=operations,
            members=[_Member(version=version, member_id=m.member_id,
                             group_instance_id=m.group_instance_id, client_id=m.client_id,
                             client_host=m.client_host, member_metadata=m.metadata,
                             member_assignment=m.assignment)
                     for m in summary.members]))
    return DescribeGroupsResponse(version=version, throttle_time_ms=0, groups=groups)
