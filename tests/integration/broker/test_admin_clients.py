"""Topic admin by real clients against a ``ferry broker`` subprocess: create (with configs,
validate_only), list, describe and alter configs, add partitions, delete, and the errors
each client surfaces."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kafka import errors as kafka_errors
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kafka.admin import NewPartitions as KpNewPartitions
from kafka.admin import NewTopic as KpNewTopic

pytestmark = pytest.mark.integration

TIMEOUT_S = 30


def kafka_error(future: Any) -> int:
    """The KafkaError code a confluent-kafka admin future failed with."""
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT_S)
    return info.value.args[0].code()


# ---------------------------------------------------------------- confluent-kafka

def test_confluent_admin_topic_lifecycle(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    fs = admin.create_topics([NewTopic("checked", 2, 1)], validate_only=True)
    assert fs["checked"].result(TIMEOUT_S) is None
    created = admin.create_topics([NewTopic("orders", 3, 1,
                                            config={"cleanup.policy": "compact"})])
    assert created["orders"].result(TIMEOUT_S) is None
    topics = admin.list_topics(timeout=TIMEOUT_S).topics
    assert "orders" in topics and "checked" not in topics
    assert len(topics["orders"].partitions) == 3

    resource = ConfigResource(ResourceType.TOPIC, "orders")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == (
        "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    change = ConfigResource(ResourceType.TOPIC, "orders", incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([change])[change].result(TIMEOUT_S)
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["cleanup.policy"].value == "compact,delete"
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "60000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)

    admin.create_partitions([NewPartitions("orders", 5)])["orders"].result(TIMEOUT_S)
    assert len(admin.list_topics(timeout=TIMEOUT_S).topics["orders"].partitions) == 5
    admin.delete_topics(["orders"])["orders"].result(TIMEOUT_S)
    assert "orders" not in admin.list_topics(timeout=TIMEOUT_S).topics


def test_confluent_admin_errors(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("taken", 1, 1)])["taken"].result(TIMEOUT_S)
    fs = admin.create_topics([
        NewTopic("taken", 1, 1), NewTopic("replicated", 1, 3),
        NewTopic("badconfig", 1, 1, config={"retention.ms": "soon"})])
    assert kafka_error(fs["taken"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert kafka_error(fs["replicated"]) == KafkaError.INVALID_REPLICATION_FACTOR
    assert kafka_error(fs["badconfig"]) == KafkaError.INVALID_CONFIG
    assert kafka_error(admin.delete_topics(["ghost"])["ghost"]) == \
        KafkaError.UNKNOWN_TOPIC_OR_PART
    assert kafka_error(admin.create_partitions([NewPartitions("taken", 1)])["taken"]) == \
        KafkaError.INVALID_PARTITIONS


def test_confluent_describe_broker_configs(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "0")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    rebalance = configs["group.initial.rebalance.delay.ms"]
    assert (rebalance.value, rebalance.source, rebalance.is_read_only) == (
        "0", ConfigSource.STATIC_BROKER_CONFIG.value, True)
    assert configs["num.partitions"].source == ConfigSource.DEFAULT_CONFIG.value


# ---------------------------------------------------------------- kafka-python

def test_kafka_python_admin_topic_lifecycle(broker: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([KpNewTopic("checked", 1, 1)], validate_only=True)
        admin.create_topics([KpNewTopic("audit", 2, 1, topic_configs={"retention.ms": "1000"})])
        assert "audit" in admin.list_topics() and "checked" not in admin.list_topics()

        resource = KpConfigResource(KpConfigResourceType.TOPIC, "audit")
        modified = admin.describe_configs([resource])["topic"]["audit"]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "1000"}
        assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

        result = admin.alter_configs([KpConfigResource(
            KpConfigResourceType.TOPIC, "audit",
            configs={"cleanup.policy": ("APPEND", "compact"), "retention.ms": ("DELETE", None)})])
        assert result == {"topic": {"audit": "OK"}}
        modified = admin.describe_configs([resource])["topic"]["audit"]
        assert {k: v["value"] for k, v in modified.items()} == {
            "cleanup.policy": "delete,compact"}

        # The legacy AlterConfigs replaces every override with the given set.
        result = admin.alter_configs([KpConfigResource(
            KpConfigResourceType.TOPIC, "audit", configs={"segment.ms": "60000"})],
            incremental=False)
        assert result == {"topic": {"audit": "OK"}}
        modified = admin.describe_configs([resource])["topic"]["audit"]
        assert {k: v["value"] for k, v in modified.items()} == {
            "cleanup.policy": "delete,compact", "segment.ms": "60000"}

        admin.create_partitions({"audit": KpNewPartitions(4)})
        admin.delete_topics(["audit"])
        assert "audit" not in admin.list_topics()
        with pytest.raises(kafka_errors.TopicAlreadyExistsError):
            admin.create_topics([KpNewTopic("__consumer_offsets", 1, 1)])
        with pytest.raises(kafka_errors.InvalidTopicError):
            admin.delete_topics(["__consumer_offsets"])
    finally:
        admin.close()


# ---------------------------------------------------------------- aiokafka

def test_aiokafka_admin_create_describe_delete(broker: Any) -> None:
    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            response = await admin.create_topics([AioNewTopic(
                "clicks", 2, 1, topic_configs={"retention.ms": "5000"})])
            assert [(t[0], t[1]) for t in response.topic_errors] == [("clicks", 0)]
            assert "clicks" in await admin.list_topics()
            [described] = await admin.describe_configs([AioConfigResource(
                AioConfigResourceType.TOPIC, "clicks", configs={"retention.ms": None})])
            [(error, _msg, _type, name, entries)] = described.resources
            assert (error, name) == (0, "clicks")
            assert [(e[0], e[1]) for e in entries] == [("retention.ms", "5000")]
            response = await admin.delete_topics(["clicks"])
            assert [(t[0], t[1]) for t in response.topic_error_codes] == [("clicks", 0)]
            assert "clicks" not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(scenario())
