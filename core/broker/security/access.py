"""What request handlers call to authorize: one call per resource, no ACL logic in them.

Without an authorizer (``authorizer.class.name`` unset) every check passes and the
authorized-operations fields are every operation the resource type supports, as Kafka
answers. The host an ACL names is the peer's address without its port.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.broker.authorized_operations import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    TOPIC_OPERATIONS,
    AclOperation,
)
from core.broker.security.acl import CLUSTER_NAME, ResourceType
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.state import BrokerState, RequestContext

__all__ = ["AclOperation", "ResourceType", "allowed", "allowed_names", "authorized_operations",
           "check_config_access", "client_quotas_refusal", "cluster_allowed",
           "idempotent_write_allowed", "peer_host", "topic_or_cluster_allowed"]

log = logging.getLogger(__name__)

_SUPPORTED = {ResourceType.TOPIC: TOPIC_OPERATIONS, ResourceType.GROUP: GROUP_OPERATIONS,
              ResourceType.CLUSTER: CLUSTER_OPERATIONS}


def peer_host(ctx: RequestContext) -> str:
    """``10.0.0.5:51234`` -> ``10.0.0.5`` (``[::1]:5`` and ``::1:5`` -> ``::1``)."""
    host = ctx.client_host.rpartition(":")[0] or ctx.client_host
    return host.strip("[]")


def allowed(state: BrokerState, ctx: RequestContext, operation: AclOperation,
            resource_type: ResourceType, name: str) -> bool:
    authorizer = state.authorizer
    if authorizer is None:
        return True
    host = peer_host(ctx)
    if authorizer.authorize(ctx.principal, host, operation, resource_type, name):
        return True
    # Kafka's authorizer logs denials on its own logger; enable DEBUG here to see them.
    log.debug("Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
              ctx.principal, operation.name, host, resource_type.name, name)
    return False


def cluster_allowed(state: BrokerState, ctx: RequestContext, operation: AclOperation) -> bool:
    return allowed(state, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def client_quotas_refusal(state: BrokerState, ctx: RequestContext, operation: AclOperation,
                          action: str) -> tuple[int, str] | None:
    """Why a DescribeClientQuotas / AlterClientQuotas request (``action``: "describing",
    "altering") is refused as a whole: ``operation`` denied on the cluster, or no quotas on
    this broker; None when it may go on."""
    if not cluster_allowed(state, ctx, operation):
        return (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                f"{action} client quotas needs {operation.name} on the cluster")
    if state.quotas is None:
        return ErrorCode.UNKNOWN_SERVER_ERROR, "this broker has no client quotas"
    return None


def topic_or_cluster_allowed(state: BrokerState, ctx: RequestContext,
                             operation: AclOperation, topic: str) -> bool:
    """CreateTopics and auto-creation: CREATE on the cluster, or on the topic itself."""
    return cluster_allowed(state, ctx, operation) or \
        allowed(state, ctx, operation, ResourceType.TOPIC, topic)


def allowed_names(state: BrokerState, ctx: RequestContext, operation: AclOperation,
                  resource_type: ResourceType, names: Iterable[str]) -> set[str]:
    """The names among ``names`` the request may perform ``operation`` on."""
    names = list(names)
    if state.authorizer is None:
        return set(names)
    return {n for n in names if allowed(state, ctx, operation, resource_type, n)}


def authorized_operations(state: BrokerState, ctx: RequestContext,
                          resource_type: ResourceType, name: str) -> frozenset[AclOperation]:
    """The value of an authorized-operations field (kafka-python encodes the set as bits)."""
    supported = _SUPPORTED[resource_type]
    authorizer = state.authorizer
    if authorizer is None:
        return supported
    return authorizer.authorized_operations(ctx.principal, peer_host(ctx), resource_type,
                                            name, supported)


def check_config_access(state: BrokerState, ctx: RequestContext, config_resource_type: int,
                        name: str, operation: AclOperation) -> None:
    """DescribeConfigs and (Incremental)AlterConfigs: DESCRIBE_CONFIGS or ALTER_CONFIGS on
    the topic, or on the cluster for broker and broker-logger resources. Raises AdminError
    with Kafka's authorization error."""
    from core.broker.admin_common import AdminError, ConfigResourceType

    if config_resource_type == ConfigResourceType.TOPIC:
        if not allowed(state, ctx, operation, ResourceType.TOPIC, name):
            raise AdminError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                             f"not authorized to {operation.name} on topic {name}")
    elif config_resource_type == ConfigResourceType.GROUP:
        if not allowed(state, ctx, operation, ResourceType.GROUP, name):
            raise AdminError(ErrorCode.GROUP_AUTHORIZATION_FAILED,
                             f"not authorized to {operation.name} on group {name}")
    elif not cluster_allowed(state, ctx, operation):
        raise AdminError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         f"not authorized to {operation.name} on the cluster")


def idempotent_write_allowed(state: BrokerState, ctx: RequestContext) -> bool:
    """InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE
    on some topic (KIP-679)."""
    authorizer = state.authorizer
    if authorizer is None or cluster_allowed(state, ctx, AclOperation.IDEMPOTENT_WRITE):
        return True
    return authorizer.any_allowed(ctx.principal, peer_host(ctx), AclOperation.WRITE,
                                  ResourceType.TOPIC)
