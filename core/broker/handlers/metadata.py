"""Metadata (key 3, v0-12): this node as the only broker, controller and leader.

Every partition is led by this node with leader epoch 0 and replicas = ISR = [this node].
Topic ids (v10+) are the topics' real ids. A missing topic is UNKNOWN_TOPIC_OR_PARTITION,
or is created with num.partitions partitions when auto.create.topics.enable is on and the
request allows it (v4+ ``allow_auto_topic_creation``; always allowed below v4), and then
described at once rather than after a LEADER_NOT_AVAILABLE round trip: the topic is
complete when ``create_topic`` returns. An illegal name is INVALID_TOPIC_EXCEPTION.
With an authorizer, the topic list hides topics the caller may not DESCRIBE, a named one
is TOPIC_AUTHORIZATION_FAILED, auto-creation needs CREATE on the cluster or the topic, and
the authorized operations (v8+) are the caller's (``core.broker.security.access``).

In a cluster the answer comes from the committed metadata image instead: the unfenced
brokers, each partition's leader, leader epoch, replicas, ISR and offline replicas; a
topic auto-created here is created through the controller.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Iterator
from functools import lru_cache

from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from core.broker.authorized_operations import NOT_REQUESTED
from core.broker.registry import handles
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    allowed,
    authorized_operations,
    cluster_allowed,
    topic_or_cluster_allowed,
)
from core.broker.security.acl import CLUSTER_NAME
from core.broker.state import BrokerState, RequestContext
from core.log.errors import InvalidTopicError, StorageError, TopicExistsError, UnknownTopicError
from core.log.manager import TopicMetadata
from core.log.topic_metadata import validate_topic_name
from core.protocol.errors import ErrorCode

__all__ = ["metadata", "topic_uuid"]

log = logging.getLogger(__name__)

_Broker = MetadataResponse.MetadataResponseBroker
_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition
LEADER_EPOCH = 0


@lru_cache(maxsize=4096)
def topic_uuid(topic_id: str) -> uuid.UUID:
    """A topic id as Ferry stores it (Kafka's 22-character URL-safe base64) as a UUID."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=="))


@handles(MetadataRequest, versions=(0, 12))
async def metadata(state: BrokerState, ctx: RequestContext) -> MetadataResponse:
    request = ctx.request
    requested = request.topics
    if state.replicas is not None:
        return await _cluster_metadata(state, ctx)
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [_describe(state, meta) for meta in _all_topics(state)
                  if allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, meta.name)]
    else:
        allow_create = state.config.auto_create_topics_enable and (
            ctx.api_version < 4 or request.allow_auto_topic_creation)
        topics = [await _lookup(state, ctx, t.name, t.topic_id, allow_create)
                  for t in requested]
    cluster_operations = _authorized_operations(state, ctx, topics)
    host, port = state.advertised_for(ctx.listener)  # the listener the client came through
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[_Broker(node_id=state.node_id, host=host, port=port, rack=None)],
        cluster_id=state.cluster_id,
        controller_id=state.node_id,
        topics=topics,
        authorized_operations=cluster_operations,
    )


def _authorized_operations(state: BrokerState, ctx: RequestContext, topics: list) -> object:
    """Fill each answered topic's authorized operations (v8+, when asked) with the
    caller's; return the cluster's (v8-v10, when asked), as Kafka computes them."""
    request = ctx.request
    if ctx.api_version >= 8 and request.include_topic_authorized_operations:
        for topic in topics:
            if topic.error_code == ErrorCode.NONE:
                topic.authorized_operations = authorized_operations(
                    state, ctx, ResourceType.TOPIC, topic.name)
    if 8 <= ctx.api_version <= 10 and request.include_cluster_authorized_operations:
        return (authorized_operations(state, ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                if cluster_allowed(state, ctx, AclOperation.DESCRIBE) else frozenset())
    return NOT_REQUESTED


async def _lookup(state: BrokerState, ctx: RequestContext, name: str | None,
                  topic_id: uuid.UUID | None, allow_create: bool) -> object:
    manager = state.manager
    if name is None:  # v10+: by id
        for meta in _all_topics(state):
            if topic_id is not None and topic_uuid(meta.topic_id) == topic_id:
                return _describe(state, meta)
        return _error(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id)
    if not allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return _error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    try:
        return _describe(state, manager.topic(name))
    except UnknownTopicError:
        if not allow_create:
            return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
        if not topic_or_cluster_allowed(state, ctx, AclOperation.CREATE, name):
            return _error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    try:
        # Off the event loop: creating a topic writes and fsyncs files.
        created = await asyncio.to_thread(manager.create_topic, name,
                                          state.config.num_partitions)
        log.info("auto-created topic %s with %d partitions for %s (client id %r)", name,
                 created.partitions, ctx.client_host, ctx.client_id)
        return _describe(state, created)
    except TopicExistsError:
        return _describe(state, manager.topic(name))
    except InvalidTopicError:
        return _error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    except StorageError as exc:
        log.error("cannot auto-create topic %s: %s", name, exc)
        return _error(ErrorCode.UNKNOWN_SERVER_ERROR, name)


def _all_topics(state: BrokerState) -> Iterator[TopicMetadata]:
    """Every topic's metadata, skipping one deleted while the list is walked."""
    for name in state.manager.topics():
        try:
            yield state.manager.topic(name)
        except UnknownTopicError:
            continue


def _describe(state: BrokerState, meta: TopicMetadata) -> object:
    node = state.node_id
    return _Topic(
        error_code=ErrorCode.NONE,
        name=meta.name,
        topic_id=topic_uuid(meta.topic_id),
        is_internal=meta.internal,
        authorized_operations=NOT_REQUESTED,
        partitions=[
            _Partition(error_code=ErrorCode.NONE, partition_index=p, leader_id=node,
                       leader_epoch=LEADER_EPOCH, replica_nodes=[node], isr_nodes=[node],
                       offline_replicas=[])
            for p in range(meta.partitions)
        ],
    )


def _error(code: ErrorCode, name: str | None, topic_id: uuid.UUID | None = None) -> object:
    return _Topic(error_code=code, name=name, topic_id=topic_id, is_internal=False,
                  authorized_operations=NOT_REQUESTED, partitions=[])


async def _cluster_metadata(state: BrokerState, ctx: RequestContext) -> MetadataResponse:
    """In a cluster: brokers, leaders, leader epochs, replicas and ISRs from the committed
    metadata image, which every broker applies, so any broker answers alike."""
    replicas = state.replicas
    assert replicas is not None
    request = ctx.request
    image = replicas.image
    names = ([t.name for t in request.topics]
             if request.topics is not None and (ctx.api_version > 0 or request.topics)
             else None)
    topics = []
    if names is None:
        topics = [_cluster_topic(image, name, state) for name in sorted(image.topics)
                  if allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)]
    else:
        allow_create = state.config.auto_create_topics_enable and (
            ctx.api_version < 4 or request.allow_auto_topic_creation)
        for t in request.topics:
            name = t.name
            if name is None:  # v10+: by id
                name = next((n for n, s in image.topics.items()
                             if uuid.UUID(s.topic_id) == t.topic_id), None)
                if name is None:
                    topics.append(_error(ErrorCode.UNKNOWN_TOPIC_ID, None, t.topic_id))
                    continue
            if not allowed(state, ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                topics.append(_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
                continue
            try:
                validate_topic_name(name)
            except InvalidTopicError:
                topics.append(_error(ErrorCode.INVALID_TOPIC_EXCEPTION, name))
                continue
            if (name not in image.topics and allow_create
                    and not topic_or_cluster_allowed(state, ctx, AclOperation.CREATE, name)):
                topics.append(_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name))
                continue
            if name not in image.topics and allow_create:
                code = await replicas.create_topic(name, state.config.num_partitions, None, {})
                if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                    topics.append(_error(ErrorCode.LEADER_NOT_AVAILABLE, name))
                    continue
                image = replicas.image
            topics.append(_cluster_topic(image, name, state))
    cluster_operations = _authorized_operations(state, ctx, topics)
    brokers = [_Broker(node_id=broker_id, host=host, port=port, rack=rack)
               for broker_id, host, port, rack in replicas.live_brokers(ctx.listener)]
    return MetadataResponse(
        throttle_time_ms=0, brokers=brokers, cluster_id=state.cluster_id,
        controller_id=replicas.controller_for_clients([b.node_id for b in brokers]),
        topics=topics,
        authorized_operations=cluster_operations)


def _cluster_topic(image: object, name: str, state: BrokerState) -> object:
    topic = image.topics.get(name)  # type: ignore[attr-defined]
    if topic is None:
        return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    live = {b for b, s in image.brokers.items() if not s.fenced}  # type: ignore[attr-defined]
    return _Topic(
        error_code=ErrorCode.NONE, name=name, topic_id=uuid.UUID(topic.topic_id),
        is_internal=name.startswith("__"), authorized_operations=NOT_REQUESTED,
        partitions=[
            _Partition(error_code=(ErrorCode.NONE if spec.leader >= 0
                                   else ErrorCode.LEADER_NOT_AVAILABLE),
                       partition_index=p, leader_id=spec.leader,
                       leader_epoch=spec.leader_epoch, replica_nodes=list(spec.replicas),
                       isr_nodes=list(spec.isr),
                       offline_replicas=[r for r in spec.replicas if r not in live])
            for p, spec in enumerate(topic.partitions)])
