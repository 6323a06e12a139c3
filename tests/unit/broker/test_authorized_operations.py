"""Metadata and DescribeCluster over real frames: authorized operations as Kafka answers
them with no authorizer (every supported operation), Integer.MIN_VALUE when not asked."""

from __future__ import annotations

import pytest
from broker_harness import InProcessBroker, WireClient
from kafka.protocol.admin import DescribeClusterRequest
from kafka.protocol.metadata import MetadataRequest

from core.broker.authorized_operations import (
    CLUSTER_OPERATIONS,
    NOT_REQUESTED,
    TOPIC_OPERATIONS,
    AclOperation,
    bitfield,
)
from core.protocol.errors import ErrorCode


def test_bitfields_are_kafkas() -> None:
    # READ..ALTER_CONFIGS except CLUSTER_ACTION for a topic, as Kafka's AclEntry lists.
    assert bitfield(TOPIC_OPERATIONS) == 0b1101_1111_1000
    assert bitfield(CLUSTER_OPERATIONS) == 0b1_1111_1010_0000
    assert AclOperation.IDEMPOTENT_WRITE in CLUSTER_OPERATIONS


@pytest.mark.parametrize("version", [8, 10, 12])
def test_metadata_fills_authorized_operations_when_asked(client: WireClient,
                                                         version: int) -> None:
    wanted = [MetadataRequest.MetadataRequestTopic(name=n) for n in ("t", "missing")]
    asked = client.call(MetadataRequest(
        topics=wanted, allow_auto_topic_creation=False,
        include_cluster_authorized_operations=True,
        include_topic_authorized_operations=True), version)
    ops = {t.name: (t.error_code, t.authorized_operations) for t in asked.topics}
    assert ops == {"t": (0, TOPIC_OPERATIONS),
                   "missing": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_REQUESTED)}
    if version <= 10:
        assert asked.authorized_operations == CLUSTER_OPERATIONS
    plain = client.call(MetadataRequest(topics=wanted[:1], allow_auto_topic_creation=False),
                        version)
    assert plain.topics[0].authorized_operations == NOT_REQUESTED
    if version <= 10:
        assert plain.authorized_operations == NOT_REQUESTED


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_names_this_node(broker: InProcessBroker, client: WireClient,
                                          version: int) -> None:
    r = client.call(DescribeClusterRequest(include_cluster_authorized_operations=True,
                                           endpoint_type=1, include_fenced_brokers=False),
                    version)
    assert (r.error_code, r.cluster_id, r.controller_id) == (0, broker.state.cluster_id, 0)
    assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(0, "127.0.0.1",
                                                                   broker.port)]
    assert r.authorized_operations == CLUSTER_OPERATIONS


def test_describe_cluster_refuses_controller_endpoints(client: WireClient) -> None:
    r = client.call(DescribeClusterRequest(include_cluster_authorized_operations=False,
                                           endpoint_type=2, include_fenced_brokers=False), 1)
    assert r.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    assert "broker endpoints" in r.error_message
