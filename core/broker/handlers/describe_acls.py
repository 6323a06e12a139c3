"""DescribeAcls (key 29) v1-3: the ACL bindings matching one filter, grouped by resource.

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED). Without an authorizer the
answer is SECURITY_DISABLED.
"""

from __future__ import annotations

from kafka.protocol.admin import DescribeAclsRequest, DescribeAclsResponse

from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
)
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["filter_from_request", "handle_describe_acls"]

_Resource = DescribeAclsResponse.DescribeAclsResource
_Acl = _Resource.AclDescription


def filter_from_request(f: object) -> AclBindingFilter:
    """A DescribeAcls request or DeleteAcls filter as an AclBindingFilter; InvalidAclError
    for codes that are unknown or UNKNOWN."""
    try:
        result = AclBindingFilter(
            ResourceType(f.resource_type_filter), f.resource_name_filter,  # type: ignore[attr-defined]
            PatternType(f.pattern_type_filter), f.principal_filter,  # type: ignore[attr-defined]
            f.host_filter, AclOperation(f.operation),  # type: ignore[attr-defined]
            AclPermissionType(f.permission_type))  # type: ignore[attr-defined]
    except ValueError as exc:
        raise InvalidAclError(str(exc)) from None
    result.validate()
    return result


@handles(DescribeAclsRequest, versions=(1, 3))
async def handle_describe_acls(state: BrokerState, ctx: RequestContext
                               ) -> DescribeAclsResponse:
    version = ctx.api_version

    def error(code: int, message: str) -> DescribeAclsResponse:
        return DescribeAclsResponse(version=version, throttle_time_ms=0, error_code=code,
                                    error_message=message, resources=[])

    if state.authorizer is None:
        return error(ErrorCode.SECURITY_DISABLED,
                     "no authorizer is configured (authorizer.class.name)")
    if not cluster_allowed(state, ctx, AclOperation.DESCRIBE):
        return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                     "describing ACLs needs DESCRIBE on the cluster")
    try:
        acl_filter = filter_from_request(ctx.request)
    except InvalidAclError as exc:
        return error(ErrorCode.INVALID_REQUEST, f"invalid ACL filter: {exc}")
    grouped: dict[object, list[AclBinding]] = {}
    for acl in state.authorizer.acls(acl_filter):
        grouped.setdefault(acl.pattern, []).append(acl)
    resources = [
        _Resource(version=version, resource_type=p.resource_type, resource_name=p.name,
                  pattern_type=p.pattern_type,
                  acls=[_Acl(version=version, principal=a.principal, host=a.host,
                             operation=a.operation, permission_type=a.permission)
                        for a in acls])
        for p, acls in grouped.items()]
    return DescribeAclsResponse(version=version, throttle_time_ms=0,
                                error_code=ErrorCode.NONE, error_message=None,
                                resources=resources)
