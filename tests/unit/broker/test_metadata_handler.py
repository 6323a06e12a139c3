"""Metadata over real frames: this node leads everything; ids, errors, auto-creation."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from broker_harness import InProcessBroker, WireClient
from kafka.protocol.metadata import MetadataRequest

from core.broker.handlers.metadata import topic_uuid
from core.protocol.errors import ErrorCode


@pytest.mark.parametrize("version", [0, 1, 4, 7, 9, 10, 12])
def test_metadata_describes_this_node_as_leader_of_everything(
        broker: InProcessBroker, client: WireClient, version: int) -> None:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                              allow_auto_topic_creation=False)
    response = client.call(request, version)
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(0, "127.0.0.1",
                                                                       broker.port)]
    [topic] = response.topics
    assert (topic.error_code, topic.name, len(topic.partitions)) == (0, "t", 2)
    p = topic.partitions[1]
    assert (p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) == (1, 0, [0], [0])
    if version >= 1:
        assert response.controller_id == 0 and topic.is_internal is False
    if version >= 2:
        assert response.cluster_id == broker.state.cluster_id
    if version >= 10:
        assert topic.topic_id == topic_uuid(broker.manager.topic("t").topic_id)


def test_metadata_all_topics_includes_internal_ones(client: WireClient) -> None:
    for version, topics in ((0, []), (1, None), (12, None)):
        response = client.call(MetadataRequest(topics=topics), version)
        found = {t.name: t for t in response.topics}
        assert set(found) == {"t", "__consumer_offsets"}
        if version:
            assert found["__consumer_offsets"].is_internal is True


def test_metadata_unknown_invalid_and_by_id(broker: InProcessBroker,
                                            client: WireClient) -> None:
    wanted = [MetadataRequest.MetadataRequestTopic(name=n) for n in ("nope", "bad/name")]
    response = client.call(MetadataRequest(topics=wanted, allow_auto_topic_creation=True), 9)
    assert [t.error_code for t in response.topics] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                       ErrorCode.INVALID_TOPIC_EXCEPTION]
    assert "nope" not in broker.manager.topics()  # auto-creation is off
    topic_id = topic_uuid(broker.manager.topic("t").topic_id)
    by_id = [MetadataRequest.MetadataRequestTopic(name=None, topic_id=topic_id),
             MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.UUID(int=5))]
    response = client.call(MetadataRequest(topics=by_id), 12)
    assert [(t.error_code, t.name) for t in response.topics] == [
        (0, "t"), (ErrorCode.UNKNOWN_TOPIC_ID, None)]


def test_metadata_auto_creates_when_enabled_and_allowed(tmp_path: Path) -> None:
    broker = InProcessBroker(tmp_path, {"auto.create.topics.enable": "true",
                                        "num.partitions": "3"})
    client = broker.client()
    try:
        topic = MetadataRequest.MetadataRequestTopic
        refused = client.call(MetadataRequest(topics=[topic(name="a")],
                                              allow_auto_topic_creation=False), 9)
        assert refused.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        created = client.call(MetadataRequest(topics=[topic(name="a")]), 3)  # v3: always
        assert (created.topics[0].error_code, len(created.topics[0].partitions)) == (0, 3)
        assert broker.manager.topic("a").partitions == 3
    finally:
        client.close()
        broker.close()
