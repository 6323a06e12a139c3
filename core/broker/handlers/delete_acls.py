"""DeleteAcls (key 31) v1-3: remove the ACL bindings matching each filter.

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED per filter). Each filter's
result lists the bindings it removed. Without an authorizer: SECURITY_DISABLED. On a
cluster node the active controller removes them from the cluster metadata; the answer
comes once this broker has applied the removal.
"""

from __future__ import annotations

from kafka.protocol.admin import DeleteAclsRequest, DeleteAclsResponse

from core.broker.admin_common import in_thread
from core.broker.handlers.describe_acls import filter_from_request
from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.security.acl import AclBindingFilter, InvalidAclError
from core.broker.security.metadata_store import ControllerRefusal
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_delete_acls"]

_FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
_Matching = _FilterResult.DeleteAclsMatchingAcl


@handles(DeleteAclsRequest, versions=(1, 3))
async def handle_delete_acls(state: BrokerState, ctx: RequestContext) -> DeleteAclsResponse:
    version = ctx.api_version
    filters = ctx.request.filters

    def failed(code: int, message: str) -> _FilterResult:
        return _FilterResult(version=version, error_code=code, error_message=message,
                             matching_acls=[])

    results: list[_FilterResult | None] = []
    valid: list[AclBindingFilter] = []
    for f in filters:
        if state.authorizer is None:
            results.append(failed(ErrorCode.SECURITY_DISABLED,
                                  "no authorizer is configured (authorizer.class.name)"))
        elif not cluster_allowed(state, ctx, AclOperation.ALTER):
            results.append(failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                  "deleting ACLs needs ALTER on the cluster"))
        else:
            try:
                valid.append(filter_from_request(f))
                results.append(None)
            except InvalidAclError as exc:
                results.append(failed(ErrorCode.INVALID_REQUEST, f"invalid ACL filter: {exc}"))
    outcomes: list[tuple[int, str | None, list]] = []
    if valid and state.metadata_security is not None:  # a cluster: the controller removes
        try:
            outcomes = await state.metadata_security.delete_acls(valid)
        except ControllerRefusal as exc:
            outcomes = [(exc.code, str(exc), [])] * len(valid)
    elif valid and state.authorizer is not None:
        outcomes = [(ErrorCode.NONE, None, acls)
                    for acls in await in_thread(state, state.authorizer.delete, valid)]
    removed = iter(outcomes)
    answered = []
    for result in results:
        if result is None:
            code, message, acls = next(removed)
            result = _FilterResult(version=version, error_code=code,
                                   error_message=message, matching_acls=[
                _Matching(version=version, error_code=ErrorCode.NONE, error_message=None,
                          resource_type=a.pattern.resource_type, resource_name=a.pattern.name,
                          pattern_type=a.pattern.pattern_type, principal=a.principal,
                          host=a.host, operation=a.operation, permission_type=a.permission)
                for a in acls])
        answered.append(result)
    return DeleteAclsResponse(version=version, throttle_time_ms=0, filter_results=answered)
