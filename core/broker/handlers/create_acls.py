"""CreateAcls (key 30) v1-3: add ACL bindings (kafka-acls --add, AdminClient.create_acls).

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED per creation otherwise). Without
an authorizer every creation is SECURITY_DISABLED, as Kafka answers. An invalid binding
is INVALID_REQUEST with the reason; the valid ones of the same request are stored. On a
cluster node they go to the active controller, which checks and commits them to the
cluster metadata; the answer comes once this broker has applied them.
"""

from __future__ import annotations

from kafka.protocol.admin import CreateAclsRequest, CreateAclsResponse

from core.broker.admin_common import in_thread
from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.security.acl import (
    AclBinding,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from core.broker.security.metadata_store import ControllerRefusal
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_create_acls"]

_Result = CreateAclsResponse.AclCreationResult


@handles(CreateAclsRequest, versions=(1, 3))
async def handle_create_acls(state: BrokerState, ctx: RequestContext) -> CreateAclsResponse:
    version = ctx.api_version
    creations = ctx.request.creations

    def answer(codes: list[tuple[int, str | None]]) -> CreateAclsResponse:
        return CreateAclsResponse(version=version, throttle_time_ms=0, results=[
            _Result(version=version, error_code=c, error_message=m) for c, m in codes])

    if state.authorizer is None:
        return answer([(ErrorCode.SECURITY_DISABLED, "no authorizer is configured "
                        "(authorizer.class.name)")] * len(creations))
    if not cluster_allowed(state, ctx, AclOperation.ALTER):
        return answer([(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        "creating ACLs needs ALTER on the cluster")] * len(creations))
    results: list[tuple[int, str | None] | None] = []  # None: valid, decided below
    valid: list[AclBinding] = []
    for c in creations:
        try:
            binding = AclBinding(
                ResourcePattern(ResourceType(c.resource_type), c.resource_name,
                                PatternType(c.resource_pattern_type)),
                c.principal, c.host, AclOperation(c.operation),
                AclPermissionType(c.permission_type))
            binding.validate()
        except (ValueError, InvalidAclError) as exc:
            results.append((ErrorCode.INVALID_REQUEST, f"invalid ACL: {exc}"))
            continue
        valid.append(binding)
        results.append(None)
    decided: list[tuple[int, str | None]] = [(ErrorCode.NONE, None)] * len(valid)
    if valid and state.metadata_security is not None:  # a cluster: the controller decides
        try:
            decided = await state.metadata_security.create_acls(valid)
        except ControllerRefusal as exc:
            decided = [(exc.code, str(exc))] * len(valid)
    elif valid:
        await in_thread(state, state.authorizer.create, valid)  # writes the store
    outcomes = iter(decided)
    return answer([r if r is not None else next(outcomes) for r in results])
