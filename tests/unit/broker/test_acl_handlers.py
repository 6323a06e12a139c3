"""Handlers under the authorizer, over real frames to an in-process broker: the APIs the
client tests (tests/integration/broker/test_acls_clients.py) do not reach, each with the
operation Kafka's request handling checks and Kafka's error code.

The caller is ``User:ANONYMOUS`` from 127.0.0.1 (no authentication on this listener).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import InProcessBroker
from kafka.protocol.admin import CreatePartitionsRequest, DescribeGroupsRequest
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import InitProducerIdRequest

from core.broker.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from core.protocol.errors import ErrorCode

ME = "User:ANONYMOUS"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path, {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "group.initial.rebalance.delay.ms": 0})
    try:
        b.manager.create_topic("mine", 1)
        b.manager.create_topic("theirs", 1)
        yield b
    finally:
        b.close()


def allow(broker: InProcessBroker, rt: ResourceType, name: str, op: AclOperation,
          pattern: PatternType = PatternType.LITERAL) -> None:
    broker.state.authorizer.create([AclBinding(ResourcePattern(rt, name, pattern), ME, "*",
                                               op, AclPermissionType.ALLOW)])


def call(broker: InProcessBroker, request: object, version: int) -> object:
    with contextlib.closing(broker.client()) as client:
        return client.call(request, version)


def test_group_membership_needs_read_on_the_group(broker):
    join = call(broker, JoinGroupRequest(
        group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
        group_instance_id=None, protocol_type="consumer", protocols=[]), 5)
    assert join.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    beat = call(broker, HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                                         group_instance_id=None), 4)
    assert beat.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    sync = call(broker, SyncGroupRequest(group_id="g", generation_id=1, member_id="m",
                                         group_instance_id=None, assignments=[]), 3)
    assert sync.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    leave = call(broker, LeaveGroupRequest(group_id="g", members=[]), 3)
    assert leave.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    coordinator = call(broker, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
    assert coordinator.coordinators[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    allow(broker, ResourceType.GROUP, "g", AclOperation.READ)
    beat = call(broker, HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                                         group_instance_id=None), 4)
    assert beat.error_code != ErrorCode.GROUP_AUTHORIZATION_FAILED
    coordinator = call(broker, FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
    assert coordinator.coordinators[0].error_code == ErrorCode.NONE  # READ implies DESCRIBE


def test_offset_commit_needs_read_on_each_topic(broker):
    allow(broker, ResourceType.GROUP, "g", AclOperation.READ)
    allow(broker, ResourceType.TOPIC, "mine", AclOperation.READ)
    Topic = OffsetCommitRequest.OffsetCommitRequestTopic
    Part = Topic.OffsetCommitRequestPartition
    response = call(broker, OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[Topic(name=t, partitions=[Part(partition_index=0, committed_offset=0,
                                               committed_leader_epoch=-1,
                                               committed_metadata="")])
                for t in ("mine", "theirs")]), 8)
    codes = {t.name: t.partitions[0].error_code for t in response.topics}
    assert codes == {"mine": ErrorCode.NONE, "theirs": ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_list_offsets_needs_describe_and_create_partitions_alter(broker):
    allow(broker, ResourceType.TOPIC, "mine", AclOperation.ALTER)  # implies DESCRIBE
    Topic = ListOffsetsRequest.ListOffsetsTopic
    response = call(broker, ListOffsetsRequest(
        replica_id=-1, isolation_level=0,
        topics=[Topic(name=t, partitions=[Topic.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-1)])
            for t in ("mine", "theirs")]), 7)
    codes = {t.name: t.partitions[0].error_code for t in response.topics}
    assert codes == {"mine": ErrorCode.NONE, "theirs": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    grow = CreatePartitionsRequest.CreatePartitionsTopic
    response = call(broker, CreatePartitionsRequest(
        topics=[grow(name=t, count=2, assignments=None) for t in ("mine", "theirs")],
        timeout_ms=10000, validate_only=False), 3)
    codes = {r.name: r.error_code for r in response.results}
    assert codes == {"mine": ErrorCode.NONE, "theirs": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert broker.manager.topic("theirs").partitions == 1


def test_idempotent_producer_id_needs_idempotent_write_or_write_on_a_topic(broker):
    def init() -> int:
        return call(broker, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
            producer_epoch=-1), 4).error_code

    assert init() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    allow(broker, ResourceType.TOPIC, "mine.", AclOperation.WRITE, PatternType.PREFIXED)
    assert init() == ErrorCode.NONE  # KIP-679: WRITE on some topic is enough


def test_describe_groups_reports_the_callers_operations(broker):
    allow(broker, ResourceType.GROUP, "g", AclOperation.READ)
    response = call(broker, DescribeGroupsRequest(groups=["g", "other"],
                                                  include_authorized_operations=True), 5)
    by_id = {g.group_id: g for g in response.groups}
    assert by_id["other"].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert by_id["g"].error_code == ErrorCode.NONE
    assert set(by_id["g"].authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(tmp_path):
    from kafka.protocol.admin import CreateTopicsRequest
    from kafka.protocol.metadata import MetadataRequest

    b = InProcessBroker(tmp_path, {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "auto.create.topics.enable": "true"})
    try:
        def lookup(name: str) -> int:
            response = call(b, MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=name, topic_id=None)],
                allow_auto_topic_creation=True, include_topic_authorized_operations=False),
                12)
            return response.topics[0].error_code

        allow(b, ResourceType.TOPIC, "auto.", AclOperation.DESCRIBE, PatternType.PREFIXED)
        assert lookup("auto.one") == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # no CREATE
        assert "auto.one" not in b.manager.topics()
        assert lookup("other") == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # no DESCRIBE
        allow(b, ResourceType.TOPIC, "auto.one", AclOperation.CREATE)
        assert lookup("auto.one") == ErrorCode.NONE and "auto.one" in b.manager.topics()
        # CREATE on the cluster covers every topic name.
        allow(b, ResourceType.CLUSTER, "kafka-cluster", AclOperation.CREATE)
        assert lookup("auto.two") == ErrorCode.NONE
        created = call(b, CreateTopicsRequest(
            topics=[CreateTopicsRequest.CreatableTopic(
                name="anything", num_partitions=1, replication_factor=1, assignments=[],
                configs=[])], timeout_ms=10000, validate_only=False), 5)
        result = created.topics[0]
        assert result.error_code == ErrorCode.NONE
        # Created, but its configs are not shown without DESCRIBE_CONFIGS (as Kafka).
        assert result.topic_config_error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert result.configs == []
    finally:
        b.close()
