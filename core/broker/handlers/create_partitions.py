"""CreatePartitions (key 37) v0-3: grow a topic's partition count; validate_only.

The new partitions pass the same checks as a new topic's (``create_topics``) before any is
created, and a failed write answers KAFKA_STORAGE_ERROR with the topic left as it was.
"""

from __future__ import annotations

import logging

from kafka.protocol.admin.topics import CreatePartitionsRequest, CreatePartitionsResponse

from core.broker.admin_common import (
    AdminError,
    check_replicas,
    duplicates,
    in_thread,
)
from core.broker.handlers.create_topics import (
    CREATION_LOCK,
    check_operation_size,
    check_partition_budget,
    creation_error,
)
from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.group import OFFSETS_TOPIC
from core.log.errors import StorageError
from core.protocol.errors import ErrorCode

__all__ = ["handle_create_partitions"]

log = logging.getLogger(__name__)

_Result = CreatePartitionsResponse.CreatePartitionsTopicResult


@handles(CreatePartitionsRequest, versions=(0, 3))
async def handle_create_partitions(state: BrokerState, ctx: RequestContext
                                   ) -> CreatePartitionsResponse:
    req = ctx.request
    version = ctx.api_version
    repeated = duplicates([t.name for t in req.topics])
    results = []
    answered: set[str] = set()
    for topic in req.topics:
        if topic.name in answered:
            continue  # a repeated topic is answered once, as Kafka's keyed response does
        answered.add(topic.name)
        try:
            if topic.name in repeated:
                raise AdminError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            if not allowed(state, ctx, AclOperation.ALTER, ResourceType.TOPIC, topic.name):
                raise AdminError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 f"not authorized to alter topic {topic.name}")
            if state.replicas is not None:  # through the controller, for every replica
                await _grow_replicated(state, topic, req.validate_only)
            else:
                await in_thread(state, _grow, state, topic, req.validate_only)
        except AdminError as exc:
            results.append(_Result(version=version, name=topic.name,
                                   error_code=int(exc.code), error_message=exc.message))
            continue
        except (StorageError, OSError) as exc:
            err = creation_error(exc, topic.name, "new partitions of topic")
            results.append(_Result(version=version, name=topic.name,
                                   error_code=int(err.code), error_message=err.message))
            continue
        results.append(_Result(version=version, name=topic.name, error_code=ErrorCode.NONE,
                               error_message=None))
    return CreatePartitionsResponse(version=version, throttle_time_ms=0, results=results)


def _grow(state: BrokerState, topic: CreatePartitionsRequest.CreatePartitionsTopic,
          validate_only: bool) -> None:
    metadata = state.manager.topic(topic.name)
    current = metadata.partitions
    if metadata.internal:
        # The offsets topic's partition count places every group (abs(hash) % count):
        # growing it would strand the committed offsets.
        raise AdminError(ErrorCode.INVALID_PARTITIONS,
                         f"Topic {topic.name} is a Ferry internal topic; its partition count "
                         "cannot change.")
    if topic.count < current:
        raise AdminError(ErrorCode.INVALID_PARTITIONS,
                         f"Topic currently has {current} partitions, which is higher than the "
                         f"requested {topic.count}.")
    if topic.count == current:
        raise AdminError(ErrorCode.INVALID_PARTITIONS,
                         f"Topic already has {current} partitions.")
    if topic.assignments is not None:
        added = topic.count - current
        if len(topic.assignments) != added:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Increasing the number of partitions by {added} but "
                             f"{len(topic.assignments)} assignments provided.")
        for offset, a in enumerate(topic.assignments):
            check_replicas(state, list(a.broker_ids), current + offset)
    # Kafka's controller writes one record per new partition.
    check_operation_size(topic.name, topic.count - current, configs=-1)
    with CREATION_LOCK:
        check_partition_budget(topic.name, topic.count - current)
        if validate_only:
            return
        state.manager.add_partitions(topic.name, topic.count)
    log.info("topic %s grew from %d to %d partitions", topic.name, current, topic.count)


async def _grow_replicated(state: BrokerState,
                           topic: CreatePartitionsRequest.CreatePartitionsTopic,
                           validate_only: bool) -> None:
    """A cluster: the controller places the new partitions (or takes the assignments) and
    every broker opens its new replicas when it applies the record."""
    replicas = state.replicas
    assert replicas is not None
    if topic.name == OFFSETS_TOPIC:
        raise AdminError(ErrorCode.INVALID_PARTITIONS,
                         f"Topic {topic.name} is a Ferry internal topic; its partition count "
                         "cannot change.")
    current = replicas.image.topics.get(topic.name)
    if current is None:
        raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         "This server does not host this topic-partition.")
    if validate_only:
        count = len(current.partitions)
        if topic.count <= count:
            raise AdminError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {count} partitions, which is higher than "
                             f"the requested {topic.count}." if topic.count < count else
                             f"Topic already has {count} partitions.")
        return
    assignments = (None if topic.assignments is None
                   else [list(a.broker_ids) for a in topic.assignments])
    code = await replicas.add_partitions(topic.name, topic.count, assignments)
    if code != ErrorCode.NONE:
        raise AdminError(code, replicas.last_error or code.name)
    log.info("topic %s grew to %d partitions through the controller", topic.name,
             topic.count)
