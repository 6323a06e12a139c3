"""CreateTopics (key 19) v2-6: create topics with configs; validate_only; one node.

Everything that can refuse a topic is checked before anything is written: the request's
fields, Kafka's bound on one operation (``MAX_RECORDS_PER_OPERATION``) and the file
descriptors the new partitions will keep open. A failure while creating (a full disk, an
I/O error) answers KAFKA_STORAGE_ERROR and leaves nothing of the topic behind.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from core.broker.admin_common import (
    LIVE_BROKERS,
    AdminError,
    check_replicas,
    config_values,
    duplicates,
    in_thread,
    storage_error,
    topic_config_entries,
)
from core.broker.connection_quotas import FileDescriptors
from core.broker.registry import handles
from core.broker.security.access import (
    AclOperation,
    ResourceType,
    allowed,
    topic_or_cluster_allowed,
)
from core.broker.state import BrokerState, RequestContext
from core.log.errors import (
    InvalidConfigError,
    InvalidTopicError,
    StorageError,
    TopicExistsError,
    UnknownTopicError,
)
from core.log.topic_metadata import TopicMetadata
from core.protocol.errors import ErrorCode

__all__ = [
    "CREATION_LOCK",
    "FDS_PER_PARTITION",
    "MAX_RECORDS_PER_OPERATION",
    "check_operation_size",
    "check_partition_budget",
    "creation_error",
    "handle_create_topics",
]

log = logging.getLogger(__name__)

_Result = CreateTopicsResponse.CreatableTopicResult
_Config = _Result.CreatableTopicConfigs

#: "Use the broker's default" for NumPartitions and ReplicationFactor (KIP-464).
USE_DEFAULT = -1
#: Kafka's controller refuses one operation that would write more metadata records than
#: this (QuorumController.MAX_RECORDS_PER_USER_OP): a topic record, one per partition and
#: one per config, so CreateTopics with 10,000 partitions is a POLICY_VIOLATION there.
MAX_RECORDS_PER_OPERATION = 10_000
#: File descriptors a new partition keeps open: its segment's log, offset and time index.
FDS_PER_PARTITION = 3
#: How long CreateTopics with no timeout_ms waits for the active controller in a cluster.
CLUSTER_CREATE_TIMEOUT_S = 10.0
#: Held while checking the descriptors left and creating partitions (CreateTopics and
#: CreatePartitions), so that two requests cannot both pass the check and then run out.
CREATION_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Plan:
    partitions: int
    replication_factor: int
    configs: dict[str, str]


@handles(CreateTopicsRequest, versions=(2, 6))
async def handle_create_topics(state: BrokerState, ctx: RequestContext) -> CreateTopicsResponse:
    req = ctx.request
    version = ctx.api_version
    repeated = duplicates([t.name for t in req.topics])
    results = []
    answered: set[str] = set()
    # Kafka forwards a cluster's CreateTopics with its timeout_ms as the deadline of the
    # whole request (0 or less: the broker's own bound).
    deadline = time.monotonic() + (req.timeout_ms / 1000 if req.timeout_ms > 0
                                   else CLUSTER_CREATE_TIMEOUT_S)
    for topic in req.topics:
        if topic.name in repeated:
            # Kafka's response is keyed by name: a repeated topic is answered once.
            if topic.name in answered:
                continue
            answered.add(topic.name)
            results.append(_error(version, topic.name, AdminError(
                ErrorCode.INVALID_REQUEST,
                f"Create topics request from client `{ctx.client_id}` contains multiple "
                f"entries for the following topics: {topic.name}")))
            continue
        if not topic_or_cluster_allowed(state, ctx, AclOperation.CREATE, topic.name):
            results.append(_error(version, topic.name, AdminError(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                f"not authorized to create topic {topic.name}")))
            continue
        if state.replicas is not None:  # a cluster: the active controller decides
            results.append(await _create_in_cluster(state, version, topic, req.validate_only,
                                                    deadline))
            continue
        try:
            plan = _plan(state, topic)
            metadata = await in_thread(state, _create, state, topic.name, plan,
                                       req.validate_only)
        except AdminError as exc:
            results.append(_error(version, topic.name, exc))
            continue
        except (StorageError, OSError) as exc:
            results.append(_error(version, topic.name, creation_error(exc, topic.name)))
            continue
        if not req.validate_only:
            log.info("client %s created topic %s (%d partitions)", ctx.client_id,
                     topic.name, plan.partitions)
        # v5+ (KIP-525) also reports what the topic got: counts and every config.
        configs = [] if version < 5 else [
            _Config(version=version, name=e.name, value=e.value, read_only=e.read_only,
                    config_source=int(e.source), is_sensitive=e.sensitive)
            for e in topic_config_entries(metadata, state.manager.defaults)]
        config_error = ErrorCode.NONE
        if configs and not allowed(state, ctx, AclOperation.DESCRIBE_CONFIGS,
                                   ResourceType.TOPIC, topic.name):
            # As Kafka: the topic is created, its configs are not shown to this caller.
            configs, config_error = [], ErrorCode.TOPIC_AUTHORIZATION_FAILED
        results.append(_Result(
            version=version, name=topic.name, error_code=ErrorCode.NONE, error_message=None,
            num_partitions=plan.partitions, replication_factor=plan.replication_factor,
            configs=configs, topic_config_error_code=config_error))
    return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=results)


async def _create_in_cluster(state: BrokerState, version: int,
                             topic: CreateTopicsRequest.CreatableTopic, validate_only: bool,
                             deadline: float) -> object:
    """CreateTopics on a cluster node: the controller places the replicas (or refuses:
    TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR with too few live brokers) by
    ``deadline`` (``time.monotonic()``), else REQUEST_TIMED_OUT."""
    assert state.replicas is not None
    try:
        configs = config_values({c.name: c.value for c in topic.configs or ()}, "topic")
        if topic.assignments:
            raise AdminError(ErrorCode.INVALID_REQUEST, "manual replica assignments are not "
                             "supported in a cluster yet; give a replication factor")
        partitions = (state.config.num_partitions if topic.num_partitions == USE_DEFAULT
                      else topic.num_partitions)
        factor = (state.replicas.config.default_replication_factor
                  if topic.replication_factor == USE_DEFAULT else topic.replication_factor)
        if partitions < 1:
            raise AdminError(ErrorCode.INVALID_PARTITIONS,
                             "Number of partitions was set to an invalid non-positive value.")
        if factor < 1:
            raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0, or -1 to use the "
                             "default value.")
        check_operation_size(topic.name, partitions, len(configs))
        if topic.name in state.replicas.image.topics:
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS,
                             f"Topic '{topic.name}' already exists.")
        if not validate_only:
            timeout_s = max(0.05, deadline - time.monotonic())
            code = await state.replicas.create_topic(topic.name, partitions, factor, configs,
                                                     timeout_s=timeout_s)
            if code != ErrorCode.NONE:
                raise AdminError(code, state.replicas.last_error or code.name)
            log.info("created topic %s (%d partitions, replication factor %d) through the "
                     "controller", topic.name, partitions, factor)
    except AdminError as exc:
        return _error(version, topic.name, exc)
    return _Result(version=version, name=topic.name, error_code=ErrorCode.NONE,
                   error_message=None, num_partitions=partitions, replication_factor=factor,
                   configs=[])


def _create(state: BrokerState, name: str, plan: _Plan, validate_only: bool) -> TopicMetadata:
    """Check the descriptors left, then create (blocking: run it with ``in_thread``)."""
    with CREATION_LOCK:
        check_partition_budget(name, plan.partitions)
        return state.manager.create_topic(name, plan.partitions, plan.configs,
                                          validate_only=validate_only)


def check_partition_budget(name: str, new_partitions: int) -> None:
    """Raise AdminError (INVALID_PARTITIONS) unless ``new_partitions`` more partitions fit
    under the open-file limit, keeping half of the descriptors that connections may not
    take (``core.broker.connection_quotas``) for the log's own work."""
    fds = FileDescriptors()
    headroom = fds.headroom()
    if headroom is None:
        return
    spare = headroom - fds.reserve // 2
    needed = new_partitions * FDS_PER_PARTITION
    if needed > spare:
        raise AdminError(
            ErrorCode.INVALID_PARTITIONS,
            f"Cannot create {new_partitions} partitions for topic {name}: they would keep "
            f"{needed} files open, and only {max(spare, 0)} of the broker's open-file limit "
            f"({fds.limit}) are spare. Create fewer partitions, close idle connections, or "
            "raise the broker's open-file limit (ulimit -n).")


def creation_error(exc: StorageError | OSError, name: str, what: str = "topic") -> AdminError:
    """The answer for a failure while creating topic ``name`` (or, with ``what``, its new
    partitions): the client's mistakes keep their codes; a failed write (full disk, I/O
    error) is KAFKA_STORAGE_ERROR, which Kafka clients retry."""
    if isinstance(exc, (TopicExistsError, UnknownTopicError, InvalidTopicError,
                        InvalidConfigError)):
        return storage_error(exc, name)
    log.error("creating %s %s failed: %s", what, name, exc)
    return AdminError(ErrorCode.KAFKA_STORAGE_ERROR,
                      f"Cannot create the {what} {name}: the data directory could not be "
                      f"written ({exc}); nothing of it was kept.")


def _plan(state: BrokerState, topic: CreateTopicsRequest.CreatableTopic) -> _Plan:
    """Partition count, replication factor and configs of one requested topic."""
    configs = config_values({c.name: c.value for c in topic.configs or ()}, "topic")
    if topic.assignments:
        if topic.num_partitions != USE_DEFAULT or topic.replication_factor != USE_DEFAULT:
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             "Both numPartitions or replicationFactor and replicasAssignments "
                             "were set. Both cannot be used at the same time.")
        check_operation_size(topic.name, len(topic.assignments), len(configs))
        return _Plan(len(topic.assignments), _assigned_replication_factor(state, topic),
                     configs)
    partitions = topic.num_partitions
    if partitions == USE_DEFAULT:
        partitions = state.config.num_partitions
    if partitions < 1:
        raise AdminError(ErrorCode.INVALID_PARTITIONS,
                         "Number of partitions was set to an invalid non-positive value.")
    factor = topic.replication_factor
    if factor == USE_DEFAULT:
        factor = state.config.default_replication_factor
    if factor < 1:
        raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         "Replication factor must be larger than 0, or -1 to use the default "
                         "value.")
    if factor > LIVE_BROKERS:
        raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Unable to replicate the partition {factor} time(s): The target "
                         f"replication factor of {factor} cannot be reached because only "
                         f"{LIVE_BROKERS} broker(s) are registered.")
    check_operation_size(topic.name, partitions, len(configs))
    return _Plan(partitions, factor, configs)


def check_operation_size(name: str, partitions: int, configs: int = 0) -> None:
    """POLICY_VIOLATION, as Kafka's controller answers, for an operation of more than
    MAX_RECORDS_PER_OPERATION metadata records."""
    records = 1 + partitions + configs
    if records > MAX_RECORDS_PER_OPERATION:
        raise AdminError(
            ErrorCode.POLICY_VIOLATION,
            f"Unable to perform excessively large batch operation. (Topic {name} with "
            f"{partitions} partitions is {records} metadata records; one request may make "
            f"at most {MAX_RECORDS_PER_OPERATION}.)")


def _assigned_replication_factor(state: BrokerState,
                                 topic: CreateTopicsRequest.CreatableTopic) -> int:
    """A manual assignment is honoured when it puts partitions 0..n-1 on this node."""
    indexes = sorted(a.partition_index for a in topic.assignments)
    if indexes != list(range(len(indexes))):
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "Partitions of a manual assignment must be consecutive and start "
                         f"from 0; got {indexes}.")
    for a in topic.assignments:
        check_replicas(state, list(a.broker_ids), a.partition_index)
    return 1


def _error(version: int, name: str, exc: AdminError) -> CreateTopicsResponse.CreatableTopicResult:
    return _Result(version=version, name=name, error_code=int(exc.code),
                   error_message=exc.message, num_partitions=-1, replication_factor=-1,
                   configs=[])
