"""FindCoordinator (key 10) v0-4: this node coordinates every group; no transactions.

A transaction coordinator lookup (key type 1) is answered
TRANSACTIONAL_ID_AUTHORIZATION_FAILED: librdkafka and the Java client treat it as fatal
at once, so ``init_transactions()`` fails in milliseconds with the message below, whereas
a retriable COORDINATOR_NOT_AVAILABLE made the producer retry until its own timeout.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.group import OFFSETS_TOPIC, partition_for
from core.protocol.errors import ErrorCode

__all__ = ["handle_find_coordinator"]

log = logging.getLogger(__name__)

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1

#: Sent to a transactional producer with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which
#: clients report together with this text.
NO_TRANSACTIONS = ("transactions are not supported by this Ferry broker: it has no "
                   "transaction coordinator; use an idempotent producer without "
                   "transactional.id")


@dataclass(frozen=True)
class _Answer:
    error: int
    message: str | None
    node_id: int = -1
    host: str = ""
    port: int = -1


def _answer(state: BrokerState, ctx: RequestContext, key_type: int, key: str) -> _Answer:
    if key_type == KEY_TYPE_GROUP and state.replicas is not None:
        return _cluster_coordinator(state, key, ctx.listener)
    if key_type == KEY_TYPE_GROUP:
        if not allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
            return _Answer(ErrorCode.GROUP_AUTHORIZATION_FAILED,
                           f"not authorized to describe group {key}")
        # The only node of its cluster: coordinator of every group, whatever its id.
        return _Answer(ErrorCode.NONE, None, state.node_id,
                       *state.advertised_for(ctx.listener))
    if key_type == KEY_TYPE_TRANSACTION:
        log.info("transaction coordinator asked for transactional id %r; not supported", key)
        return _Answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_TRANSACTIONS)
    return _Answer(ErrorCode.INVALID_REQUEST, f"Unknown coordinator key type {key_type}")


def _cluster_coordinator(state: BrokerState, group_id: str, listener: str) -> _Answer:
    """In a cluster a group's coordinator is the leader of its ``__consumer_offsets``
    partition, which the broker node creates at start (with
    offsets.topic.replication.factor replicas) once enough brokers are live; its address
    is the one of the client's ``listener``."""
    assert state.replicas is not None
    image = state.replicas.image
    topic = image.topics.get(OFFSETS_TOPIC)
    if topic is None:
        return _Answer(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       f"{OFFSETS_TOPIC} does not exist yet; retry")
    spec = topic.partitions[partition_for(group_id, len(topic.partitions))]
    address = state.replicas.broker_address(spec.leader, listener)
    if address is None:
        return _Answer(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       f"the {OFFSETS_TOPIC} partition of group {group_id!r} has no leader")
    return _Answer(ErrorCode.NONE, None, spec.leader, *address)


@handles(FindCoordinatorRequest, versions=(0, 4))
async def handle_find_coordinator(state: BrokerState, ctx: RequestContext
                                  ) -> FindCoordinatorResponse:
    req = ctx.request
    version = ctx.api_version
    key_type = req.key_type if version >= 1 else KEY_TYPE_GROUP
    if version >= 4:
        # KIP-699: one request asks for several keys of one type.
        coordinators = []
        for key in req.coordinator_keys:
            a = _answer(state, ctx, key_type, key)
            coordinators.append(FindCoordinatorResponse.Coordinator(
                version=version, key=key, node_id=a.node_id, host=a.host, port=a.port,
                error_code=a.error, error_message=a.message))
        return FindCoordinatorResponse(version=version, throttle_time_ms=0,
                                       coordinators=coordinators)
    a = _answer(state, ctx, key_type, req.key)
    return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=a.error,
                                   error_message=a.message, node_id=a.node_id, host=a.host,
                                   port=a.port)
