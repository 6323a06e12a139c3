"""The admin handlers driven directly: kafka-python requests at several versions against a
real LogManager in a tmp dir, responses checked after a round trip through the codec."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)

import core.broker.handlers.alter_configs
import core.broker.handlers.create_partitions
import core.broker.handlers.create_topics
import core.broker.handlers.delete_topics
import core.broker.handlers.describe_configs
import core.broker.handlers.incremental_alter_configs  # noqa: F401 - registers the handlers
from core.broker.admin_common import ConfigSource, ConfigType
from core.broker.config import BrokerConfig
from core.broker.dynamic_config import DynamicBrokerConfigs
from core.broker.registry import lookup
from core.broker.state import BrokerState, RequestContext
from core.group import GroupCoordinator, LogOffsetStore
from core.log.config import TOPIC_CONFIGS
from core.log.errors import UnknownTopicError
from core.log.manager import LogManager
from core.protocol.errors import ErrorCode

Topic = CreateTopicsRequest.CreatableTopic
TopicConfig = Topic.CreatableTopicConfig
ReplicaAssignment = Topic.CreatableReplicaAssignment
GrowTopic = CreatePartitionsRequest.CreatePartitionsTopic
GrowAssignment = GrowTopic.CreatePartitionsAssignment
Resource = DescribeConfigsRequest.DescribeConfigsResource
AlterResource = IncrementalAlterConfigsRequest.AlterConfigsResource
AlterOp = AlterResource.AlterableConfig
ReplaceResource = AlterConfigsRequest.AlterConfigsResource
Replace = ReplaceResource.AlterableConfig

NODE = 7
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
#: The broker's config file: two settings that change topic defaults or admin behaviour.
BROKER_SETTINGS = {"node.id": str(NODE), "num.partitions": "3", "log.retention.ms": "3600000"}


class Admin:
    """Calls admin handlers as the server does: request and response cross the codec."""

    def __init__(self, state: BrokerState, loop: asyncio.AbstractEventLoop):
        self.state = state
        self.manager = state.manager
        self.loop = loop
        self._correlation = itertools.count(1)

    def call(self, request_class: type, version: int, **fields: Any) -> Any:
        spec = lookup(request_class.API_KEY)
        assert spec is not None and spec.min_version <= version <= spec.max_version
        request = request_class.decode(
            request_class(version=version, **fields).encode(version=version), version=version)
        ctx = RequestContext(request_class.API_KEY, version, next(self._correlation),
                             "admin-1", "127.0.0.1", "conn-1", request)
        response = self.loop.run_until_complete(spec.handler(self.state, ctx))
        response_class = type(response)[None]
        assert response_class.API_KEY == request_class.API_KEY
        return response_class.decode(response.encode(version=version), version=version)

    def create(self, version: int, *topics: Any, validate_only: bool = False) -> dict[str, Any]:
        r = self.call(CreateTopicsRequest, version, topics=list(topics), timeout_ms=1000,
                      validate_only=validate_only)
        return {t.name: t for t in r.topics}

    def describe(self, version: int, *resources: Any, synonyms: bool = False,
                 docs: bool = False) -> list[Any]:
        return self.call(DescribeConfigsRequest, version, resources=list(resources),
                         include_synonyms=synonyms, include_documentation=docs).results

    def alter(self, version: int, name: str, *ops: Any, validate_only: bool = False,
              resource_type: int = TOPIC) -> Any:
        [r] = self.call(IncrementalAlterConfigsRequest, version, validate_only=validate_only,
                        resources=[AlterResource(resource_type=resource_type,
                                                 resource_name=name,
                                                 configs=list(ops))]).responses
        return r


def topic(name: str, partitions: int = 1, replication: int = 1, configs: dict | None = None,
          assignments: list | None = None) -> Any:
    return Topic(name=name, num_partitions=partitions, replication_factor=replication,
                 assignments=assignments or [],
                 configs=[TopicConfig(name=k, value=v) for k, v in (configs or {}).items()])


@pytest.fixture
def admin(tmp_path: Path) -> Iterator[Admin]:
    loop = asyncio.new_event_loop()
    config = BrokerConfig.parse(BROKER_SETTINGS)
    manager = LogManager.open(tmp_path / "data", defaults=config.topic_defaults,
                              background=False)
    coordinator = GroupCoordinator(LogOffsetStore(manager, partitions=2))  # __consumer_offsets
    coordinator.load()
    state = BrokerState(config=config, manager=manager, coordinator=coordinator,
                        producers=None, node_id=NODE, advertised_host="broker.test",
                        advertised_port=19092, cluster_id="cluster", loop=loop,
                        dynamic=DynamicBrokerConfigs.load(tmp_path / "data", config.raw))
    yield Admin(state, loop)
    coordinator.close()
    manager.close()
    loop.close()


# ---------------------------------------------------------------- CreateTopics

@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
def test_create_topic_with_configs(admin: Admin, version: int) -> None:
    r = admin.create(version, topic("orders", 4, configs={"cleanup.policy": "compact"}))
    result = r["orders"]
    assert (result.error_code, result.error_message) == (ErrorCode.NONE, None)
    meta = admin.manager.topic("orders")
    assert (meta.partitions, meta.overrides) == (4, {"cleanup.policy": "compact"})
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (4, 1)
        configs = {c.name: c for c in result.configs}
        assert set(configs) == set(TOPIC_CONFIGS)
        assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == (
            "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == (
            "3600000", ConfigSource.STATIC_BROKER_CONFIG)
        assert (configs["segment.bytes"].value, configs["segment.bytes"].config_source) == (
            "1073741824", ConfigSource.DEFAULT_CONFIG)
        assert not any(c.read_only or c.is_sensitive for c in result.configs)


def test_create_validate_only_creates_nothing(admin: Admin) -> None:
    r = admin.create(5, topic("orders", 2, configs={"retention.ms": "1000"}),
                     validate_only=True)
    assert (r["orders"].error_code, r["orders"].num_partitions) == (ErrorCode.NONE, 2)
    assert "orders" not in admin.manager.topics()
    # Validation still reports what a real create would.
    bad = admin.create(5, topic("orders", 2, configs={"retention.ms": "soon"}),
                       validate_only=True)
    assert bad["orders"].error_code == ErrorCode.INVALID_CONFIG


def test_create_with_defaults(admin: Admin) -> None:
    r = admin.create(4, topic("auto", -1, -1))
    assert r["auto"].error_code == ErrorCode.NONE
    assert admin.manager.topic("auto").partitions == 3  # num.partitions of the broker


@pytest.mark.parametrize(("spec", "code", "text"), [
    (topic("bad name!"), ErrorCode.INVALID_TOPIC_EXCEPTION, "illegal"),
    (topic("t", 0), ErrorCode.INVALID_PARTITIONS, "non-positive"),
    (topic("t", 1, 3), ErrorCode.INVALID_REPLICATION_FACTOR, "only 1 broker"),
    (topic("t", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR, "larger than 0"),
    (topic("t", configs={"retention.mss": "1"}), ErrorCode.INVALID_CONFIG, "retention.mss"),
    (topic("t", configs={"segment.bytes": "x"}), ErrorCode.INVALID_CONFIG, "segment.bytes"),
    (topic("t", configs={"retention.ms": None}), ErrorCode.INVALID_CONFIG, "retention.ms"),
    (topic("t", 2, -1, assignments=[ReplicaAssignment(partition_index=0, broker_ids=[NODE])]),
     ErrorCode.INVALID_REQUEST, "Both"),
    (topic("t", -1, -1, assignments=[ReplicaAssignment(partition_index=0, broker_ids=[1])]),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT, "broker 1"),
    (topic("t", -1, -1, assignments=[ReplicaAssignment(partition_index=1, broker_ids=[NODE])]),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT, "start from 0"),
])
def test_create_errors(admin: Admin, spec: Any, code: int, text: str) -> None:
    r = admin.create(5, spec, topic("fine"))
    assert r[spec.name].error_code == code
    assert text in r[spec.name].error_message
    assert (r[spec.name].num_partitions, r[spec.name].configs) == (-1, [])
    assert r["fine"].error_code == ErrorCode.NONE  # one topic's problem is its own
    if spec.name != "fine":
        assert spec.name not in admin.manager.topics()


def test_create_existing_and_repeated_topics(admin: Admin) -> None:
    admin.create(3, topic("orders"))
    r = admin.call(CreateTopicsRequest, 3, timeout_ms=1000, topics=[
        topic("orders"), topic("twice"), topic("twice")])
    assert [(t.name, t.error_code) for t in r.topics] == [
        ("orders", ErrorCode.TOPIC_ALREADY_EXISTS), ("twice", ErrorCode.INVALID_REQUEST)]
    assert "twice" not in admin.manager.topics()


def test_create_honours_an_assignment_to_this_node(admin: Admin) -> None:
    r = admin.create(5, topic("placed", -1, -1, assignments=[
        ReplicaAssignment(partition_index=i, broker_ids=[NODE]) for i in (1, 0)]))
    assert (r["placed"].error_code, r["placed"].num_partitions) == (ErrorCode.NONE, 2)
    assert admin.manager.topic("placed").partitions == 2


# ---------------------------------------------------------------- DeleteTopics

@pytest.mark.parametrize("version", [1, 3, 4, 5])
def test_delete_topics(admin: Admin, version: int) -> None:
    admin.create(3, topic("a"), topic("b"))
    r = admin.call(DeleteTopicsRequest, version, timeout_ms=1000,
                   topic_names=["a", "missing", "__consumer_offsets"])
    got = {t.name: t.error_code for t in r.responses}
    assert got == {"a": ErrorCode.NONE, "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                   "__consumer_offsets": ErrorCode.INVALID_TOPIC_EXCEPTION}
    assert admin.manager.topics() == ["__consumer_offsets", "b"]
    if version >= 5:
        messages = {t.name: t.error_message for t in r.responses}
        assert messages["a"] is None
        assert "internal" in messages["__consumer_offsets"]


def test_delete_repeated_topic_is_refused(admin: Admin) -> None:
    admin.create(3, topic("a"))
    r = admin.call(DeleteTopicsRequest, 4, timeout_ms=1000, topic_names=["a", "a"])
    assert [(t.name, t.error_code) for t in r.responses] == [("a", ErrorCode.INVALID_REQUEST)]
    assert "a" in admin.manager.topics()


# ---------------------------------------------------------------- CreatePartitions

def grow(admin: Admin, version: int, *topics: Any, validate_only: bool = False) -> dict:
    r = admin.call(CreatePartitionsRequest, version, topics=list(topics), timeout_ms=1000,
                   validate_only=validate_only)
    return {t.name: (t.error_code, t.error_message) for t in r.results}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_partitions(admin: Admin, version: int) -> None:
    admin.create(3, topic("a", 1))
    assert grow(admin, version, GrowTopic(name="a", count=3, assignments=None),
                validate_only=True) == {"a": (0, None)}
    assert admin.manager.topic("a").partitions == 1
    assert grow(admin, version, GrowTopic(name="a", count=3, assignments=[
        GrowAssignment(broker_ids=[NODE]), GrowAssignment(broker_ids=[NODE])])) == {
            "a": (0, None)}
    assert admin.manager.topic("a").partitions == 3
    assert admin.manager.log("a", 2).log_end_offset == 0


@pytest.mark.parametrize(("count", "assignments", "code"), [
    (1, None, ErrorCode.INVALID_PARTITIONS),
    (2, None, ErrorCode.INVALID_PARTITIONS),
    (4, [[NODE]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (3, [[1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
])
def test_create_partitions_errors(admin: Admin, count: int, assignments: list | None,
                                  code: int) -> None:
    admin.create(3, topic("a", 2))
    r = grow(admin, 1, GrowTopic(name="a", count=count, assignments=None if assignments is None
                                 else [GrowAssignment(broker_ids=b) for b in assignments]),
             GrowTopic(name="missing", count=5, assignments=None),
             GrowTopic(name="__consumer_offsets", count=9, assignments=None))
    assert r["a"][0] == code and r["a"][1]
    assert r["missing"][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r["__consumer_offsets"][0] == ErrorCode.INVALID_PARTITIONS
    assert admin.manager.topic("a").partitions == 2
    assert admin.manager.topic("__consumer_offsets").partitions == 2


# ---------------------------------------------------------------- DescribeConfigs

@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_topic_configs(admin: Admin, version: int) -> None:
    admin.create(3, topic("orders", configs={"cleanup.policy": "compact"}))
    [r] = admin.describe(version, Resource(resource_type=TOPIC, resource_name="orders",
                                           configuration_keys=None), synonyms=True, docs=True)
    assert (r.error_code, r.error_message, r.resource_name) == (0, None, "orders")
    configs = {c.name: c for c in r.configs}
    assert set(configs) == set(TOPIC_CONFIGS)
    policy, retention = configs["cleanup.policy"], configs["retention.ms"]
    assert (policy.value, policy.config_source, policy.read_only, policy.is_sensitive) == (
        "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert [(s.name, s.value, s.source) for s in policy.synonyms] == [
        ("cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("log.retention.ms", "3600000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)]
    if version >= 3:
        assert policy.config_type == ConfigType.LIST
        assert policy.documentation == TOPIC_CONFIGS["cleanup.policy"].doc


def test_describe_selected_keys_without_synonyms_or_docs(admin: Admin) -> None:
    admin.create(3, topic("orders"))
    [r] = admin.describe(4, Resource(resource_type=TOPIC, resource_name="orders",
                                     configuration_keys=["retention.ms", "no.such.key"]))
    [c] = r.configs
    assert (c.name, c.value, c.synonyms, c.documentation) == ("retention.ms", "3600000", [],
                                                               None)
    assert c.config_type == ConfigType.LONG


def test_describe_this_broker(admin: Admin) -> None:
    [r] = admin.describe(3, Resource(resource_type=BROKER, resource_name=str(NODE),
                                     configuration_keys=None), synonyms=True)
    assert r.error_code == ErrorCode.NONE
    configs = {c.name: c for c in r.configs}
    assert (configs["num.partitions"].value, configs["num.partitions"].config_source) == (
        "3", ConfigSource.STATIC_BROKER_CONFIG)
    assert (configs["group.max.size"].config_source,
            configs["auto.create.topics.enable"].value) == (ConfigSource.DEFAULT_CONFIG, "false")
    assert (configs["log.retention.ms"].value, configs["log.retention.ms"].config_source) == (
        "3600000", ConfigSource.STATIC_BROKER_CONFIG)
    assert (configs["node.id"].value, configs["node.id"].config_type) == (
        str(NODE), ConfigType.INT)
    # Read-only unless Kafka lets AlterConfigs change it.
    assert configs["node.id"].read_only and not configs["log.retention.ms"].read_only


@pytest.mark.parametrize(("resource_type", "name", "code"), [
    (TOPIC, "missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (TOPIC, "", ErrorCode.INVALID_TOPIC_EXCEPTION),
    (BROKER, "3", ErrorCode.INVALID_REQUEST),
    (BROKER, "seven", ErrorCode.INVALID_REQUEST),
    (BROKER_LOGGER, str(NODE), ErrorCode.INVALID_REQUEST),
])
def test_describe_errors(admin: Admin, resource_type: int, name: str, code: int) -> None:
    bad, default = admin.describe(
        2, Resource(resource_type=resource_type, resource_name=name, configuration_keys=None),
        Resource(resource_type=BROKER, resource_name="", configuration_keys=None))
    assert (bad.error_code, bad.configs) == (code, [])
    assert bad.error_message
    # The cluster-wide dynamic broker defaults: none in Ferry.
    assert (default.error_code, default.configs) == (ErrorCode.NONE, [])


# ---------------------------------------------------------------- IncrementalAlterConfigs

def overrides(admin: Admin, name: str = "orders") -> dict[str, str]:
    return admin.manager.topic(name).overrides


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_set_delete_append_subtract(admin: Admin, version: int) -> None:
    admin.create(3, topic("orders", configs={"segment.ms": "60000"}))
    r = admin.alter(version, "orders",
                    AlterOp(name="retention.ms", config_operation=SET, value="1000"),
                    AlterOp(name="segment.ms", config_operation=DELETE, value=None),
                    AlterOp(name="cleanup.policy", config_operation=APPEND, value="compact"))
    assert (r.error_code, r.error_message, r.resource_name) == (0, None, "orders")
    assert overrides(admin) == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
    assert admin.manager.log("orders", 0).config.compact
    r = admin.alter(version, "orders",
                    AlterOp(name="cleanup.policy", config_operation=SUBTRACT, value="delete"))
    assert r.error_code == ErrorCode.NONE
    assert overrides(admin)["cleanup.policy"] == "compact"


def test_incremental_validate_only_changes_nothing(admin: Admin) -> None:
    admin.create(3, topic("orders"))
    ok = admin.alter(1, "orders", AlterOp(name="retention.ms", config_operation=SET,
                                          value="5"), validate_only=True)
    bad = admin.alter(1, "orders", AlterOp(name="retention.ms", config_operation=SET,
                                           value="-5"), validate_only=True)
    assert ok.error_code == ErrorCode.NONE
    assert bad.error_code == ErrorCode.INVALID_CONFIG and "retention.ms" in bad.error_message
    assert overrides(admin) == {}


@pytest.mark.parametrize(("ops", "code", "text"), [
    ([("retention.ms", APPEND, "5")], ErrorCode.INVALID_CONFIG, "retention.ms"),
    ([("retention.mss", SET, "5")], ErrorCode.INVALID_CONFIG, "retention.mss"),
    ([("retention.mss", DELETE, None)], ErrorCode.INVALID_CONFIG, "retention.mss"),
    ([("cleanup.policy", SET, "shred")], ErrorCode.INVALID_CONFIG, "cleanup.policy"),
    ([("cleanup.policy", SUBTRACT, "delete")], ErrorCode.INVALID_CONFIG, "cleanup.policy"),
    ([("retention.ms", SET, None)], ErrorCode.INVALID_CONFIG, "retention.ms"),
    ([("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST, "operation"),
    ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)],
     ErrorCode.INVALID_REQUEST, "duplicate"),
])
def test_incremental_errors_change_nothing(admin: Admin, ops: list, code: int,
                                           text: str) -> None:
    admin.create(3, topic("orders", configs={"segment.ms": "60000"}))
    r = admin.alter(0, "orders", AlterOp(name="segment.ms", config_operation=DELETE,
                                         value=None),
                    *[AlterOp(name=n, config_operation=op, value=v) for n, op, v in ops])
    assert r.error_code == code
    assert text in r.error_message
    assert overrides(admin) == {"segment.ms": "60000"}


def test_incremental_other_resources(admin: Admin) -> None:
    op = AlterOp(name="num.partitions", config_operation=SET, value="5")
    for name, resource_type, code in [
            ("missing", TOPIC, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            (str(NODE), BROKER, ErrorCode.INVALID_REQUEST),
            ("", BROKER, ErrorCode.INVALID_REQUEST),
            ("3", BROKER, ErrorCode.INVALID_REQUEST),
            (str(NODE), BROKER_LOGGER, ErrorCode.INVALID_REQUEST)]:
        r = admin.alter(1, name, op, resource_type=resource_type)
        assert (r.error_code, r.resource_type) == (code, resource_type), name
    with pytest.raises(UnknownTopicError):
        admin.manager.topic("missing")


# ---------------------------------------------------------------- AlterConfigs

@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_every_override(admin: Admin, version: int) -> None:
    admin.create(3, topic("orders", configs={"segment.ms": "60000", "retention.ms": "9"}))

    def replace(*pairs: tuple[str, str], validate_only: bool = False) -> Any:
        [r] = admin.call(AlterConfigsRequest, version, validate_only=validate_only,
                         resources=[ReplaceResource(
                             resource_type=TOPIC, resource_name="orders",
                             configs=[Replace(name=n, value=v) for n, v in pairs])]).responses
        return r

    assert replace(("retention.ms", "10"), validate_only=True).error_code == ErrorCode.NONE
    assert overrides(admin) == {"segment.ms": "60000", "retention.ms": "9"}
    assert replace(("retention.ms", "10")).error_code == ErrorCode.NONE
    assert overrides(admin) == {"retention.ms": "10"}
    bad = replace(("retention.ms", "x"))
    assert bad.error_code == ErrorCode.INVALID_CONFIG and "retention.ms" in bad.error_message
    assert overrides(admin) == {"retention.ms": "10"}


def test_alter_configs_refuses_broker_resources(admin: Admin) -> None:
    [r] = admin.call(AlterConfigsRequest, 1, validate_only=False, resources=[ReplaceResource(
        resource_type=BROKER, resource_name=str(NODE),
        configs=[Replace(name="num.partitions", value="9")])]).responses
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert "num.partitions" in r.error_message
