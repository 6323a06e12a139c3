"""DescribeCluster (key 60) v0-2: this node as the only broker and the controller.

Admin clients (``describe_cluster``) ask brokers (endpoint type 1); a request for the
controller endpoints (type 2) is UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers.
Authorized operations are the caller's (every cluster operation without an authorizer).
"""

from __future__ import annotations

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse

from core.broker.authorized_operations import NOT_REQUESTED
from core.broker.registry import handles
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    authorized_operations,
    cluster_allowed,
)
from core.broker.security.acl import CLUSTER_NAME
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_describe_cluster"]

_BROKER_ENDPOINTS = 1


@handles(DescribeClusterRequest, versions=(0, 2))
async def handle_describe_cluster(state: BrokerState, ctx: RequestContext
                                  ) -> DescribeClusterResponse:
    request = ctx.request
    version = ctx.api_version
    if version >= 1 and request.endpoint_type != _BROKER_ENDPOINTS:
        return DescribeClusterResponse(
            version=version, throttle_time_ms=0,
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"endpoint type {request.endpoint_type} is not served: this "
                          "broker answers for broker endpoints (1) only",
            endpoint_type=request.endpoint_type, cluster_id=state.cluster_id,
            controller_id=-1, brokers=[], authorized_operations=NOT_REQUESTED)
    operations = NOT_REQUESTED
    if request.include_cluster_authorized_operations:
        operations = (authorized_operations(state, ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                      if cluster_allowed(state, ctx, AclOperation.DESCRIBE) else frozenset())
    if state.replicas is not None:  # a cluster: every live broker on the client's listener
        found = [(b, h, p, rack) for b, h, p, rack in state.replicas.live_brokers(ctx.listener)]
        controller_id = state.replicas.controller_for_clients([b for b, _, _, _ in found])
    else:
        found = [(state.node_id, *state.advertised_for(ctx.listener), None)]
        controller_id = state.node_id
    brokers = [DescribeClusterResponse.DescribeClusterBroker(
        version=version, broker_id=b, host=h, port=p, rack=rack, is_fenced=False)
        for b, h, p, rack in found]
    return DescribeClusterResponse(
        version=version, throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
        endpoint_type=_BROKER_ENDPOINTS, cluster_id=state.cluster_id,
        controller_id=controller_id, brokers=brokers, authorized_operations=operations)
