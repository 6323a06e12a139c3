"""ACLs against real clients: confluent-kafka (librdkafka) and kafka-python on a broker
subprocess with Kafka's StandardAuthorizer configured.

Before authentication every connection is ``User:ANONYMOUS`` from 127.0.0.1, so the ACLs
here name that principal (or ``User:*``) and hosts. The broker first runs with
``super.users=User:ANONYMOUS`` so that ``ferry acls`` and the admin client can set ACLs,
topics and group offsets up; it then restarts without it, and the ACLs (stored in its
data directory) decide alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import GroupAuthorizationFailedError

from core.cli.main import main as ferry

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ME = "User:ANONYMOUS"
TOPICS = ["open.a", "open.frozen", "readonly", "secret.x", "elsewhere"]


def _acls(bootstrap: str, *args: str) -> None:
    assert ferry(["acls", "add", "--bootstrap-server", bootstrap, *args]) == 0


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("acl-broker")
    config = {"authorizer.class.name": AUTHORIZER, "super.users": "User:admin;" + ME,
              "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "2"}
    broker = BrokerProcess(base / "data", config, base / "broker.log")
    broker.start()
    try:
        b = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        for f in admin.create_topics([NewTopic(t, 1) for t in TOPICS]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": b})
        for t in TOPICS:
            p.produce(t, b"seed")
        assert p.flush(30) == 0
        for group in ("secret.g", "open.g0"):
            c = Consumer({"bootstrap.servers": b, "group.id": group})
            c.commit(offsets=[TopicPartition("open.a", 0, 1)], asynchronous=False)
            c.close()
        # What ANONYMOUS from 127.0.0.1 may do once it is no longer a super user.
        _acls(b, "--allow-principal", ME, "--allow-host", "127.0.0.1", "--operation", "All",
              "--topic", "open.", "--resource-pattern-type", "prefixed")
        _acls(b, "--allow-principal", ME, "--operation", "Read", "--group", "open.",
              "--resource-pattern-type", "prefixed")
        _acls(b, "--deny-principal", "User:*", "--operation", "Write", "--topic", "open.frozen")
        _acls(b, "--allow-principal", ME, "--operation", "Describe", "--topic", "readonly")
        _acls(b, "--allow-principal", ME, "--allow-host", "10.9.9.9", "--operation", "All",
              "--topic", "elsewhere")
        broker.stop()
        broker.config["super.users"] = "User:admin"
        broker.start()
        yield broker
    finally:
        broker.stop()


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _code(future) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as info:
        future.result(30)
    return info.value.args[0].code()


def test_metadata_lists_only_describable_topics(secured: BrokerProcess) -> None:
    admin = _admin(secured)
    topics = set(admin.list_topics(timeout=30).topics)
    assert {"open.a", "open.frozen", "readonly"} <= topics
    assert "secret.x" not in topics and "elsewhere" not in topics  # host does not match
    # A named topic the caller may not describe is TOPIC_AUTHORIZATION_FAILED.
    named = admin.list_topics(topic="secret.x", timeout=30).topics["secret.x"]
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    consumer = KafkaConsumer(bootstrap_servers=secured.bootstrap)
    try:
        assert consumer.partitions_for_topic("open.a") == {0}
        assert not consumer.partitions_for_topic("secret.x")
    finally:
        consumer.close()


def test_produce_needs_write_and_deny_wins(secured: BrokerProcess) -> None:
    results: dict[str, KafkaError | None] = {}
    p = Producer({"bootstrap.servers": secured.bootstrap, "message.timeout.ms": 10000,
                  "retries": 0})
    for t in ("open.a", "open.frozen", "secret.x"):
        p.produce(t, b"v", on_delivery=lambda err, msg, t=t: results.__setitem__(t, err))
    p.flush(30)
    assert results["open.a"] is None
    assert results["open.frozen"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert results["secret.x"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_consume_needs_read_on_topic_and_group(secured: BrokerProcess) -> None:
    def first_event(topic: str, group: str) -> object:
        c = Consumer({"bootstrap.servers": secured.bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest"})
        try:
            c.subscribe([topic])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                msg = c.poll(0.5)
                if msg is not None:
                    return msg.error() or msg.value()
            return None
        finally:
            c.close()

    assert first_event("open.a", "open.g1") == b"seed"
    denied_topic = first_event("readonly", "open.g2")
    assert isinstance(denied_topic, KafkaError)
    assert denied_topic.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    denied_group = first_event("open.a", "secret.g2")
    assert isinstance(denied_group, KafkaError)
    assert denied_group.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_groups_are_filtered_and_their_offsets_guarded(secured: BrokerProcess) -> None:
    client = _admin(secured)
    listed = client.list_consumer_groups().result(30)
    ids = {g.group_id for g in listed.valid}
    assert "open.g0" in ids and "secret.g" not in ids, (ids, listed.errors)
    admin = KafkaAdminClient(bootstrap_servers=secured.bootstrap)
    try:
        assert admin.list_group_offsets("open.g0")
        with pytest.raises(GroupAuthorizationFailedError):
            admin.list_group_offsets("secret.g")
    finally:
        admin.close()
    deleted = client.delete_consumer_groups(["secret.g"])["secret.g"]
    assert _code(deleted) == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_admin_operations_answer_kafkas_authorization_errors(secured: BrokerProcess) -> None:
    admin = _admin(secured)
    created = admin.create_topics([NewTopic("secret.new", 1), NewTopic("open.new", 1)])
    assert _code(created["secret.new"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    created["open.new"].result(30)  # ALL on open. includes CREATE
    assert _code(admin.delete_topics(["secret.x"])["secret.x"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    topic = ConfigResource(ConfigResource.Type.TOPIC, "secret.x")
    assert _code(admin.describe_configs([topic])[topic]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker_res = ConfigResource(ConfigResource.Type.BROKER, "0")
    assert _code(admin.describe_configs([broker_res])[broker_res]) == \
        KafkaError.CLUSTER_AUTHORIZATION_FAILED
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    def retention(topic: str) -> ConfigResource:
        return ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", "1",
                        incremental_operation=AlterConfigOpType.SET)])

    secret, frozen = retention("secret.x"), retention("open.frozen")
    assert _code(admin.incremental_alter_configs([secret])[secret]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin.incremental_alter_configs([frozen])[frozen].result(30)  # ALL has ALTER_CONFIGS
    # readonly is visible (DESCRIBE) but not DELETE: its records stay.
    records = admin.delete_records([TopicPartition("readonly", 0, 1)])
    assert _code(next(iter(records.values()))) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    acl = AclBinding(ResourceType.TOPIC, "secret.", ResourcePatternType.PREFIXED, ME, "*",
                     AclOperation.ALL, AclPermissionType.ALLOW)
    assert _code(admin.create_acls([acl])[acl]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_authorized_operations_are_the_callers(secured: BrokerProcess) -> None:
    from confluent_kafka import TopicCollection

    admin = _admin(secured)
    described = admin.describe_topics(TopicCollection(["open.frozen", "readonly"]),
                                      include_authorized_operations=True)
    frozen = set(described["open.frozen"].result(30).authorized_operations)
    assert AclOperation.READ in frozen and AclOperation.WRITE not in frozen
    assert set(described["readonly"].result(30).authorized_operations) == \
        {AclOperation.DESCRIBE}
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert not cluster.authorized_operations  # no DESCRIBE on the cluster


def test_acl_apis_without_an_authorizer_are_security_disabled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broker = BrokerProcess(tmp_path / "data", {}, tmp_path / "broker.log")
    broker.start()
    try:
        admin = _admin(broker)
        acl = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, ME, "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
        assert _code(admin.create_acls([acl])[acl]) == KafkaError.SECURITY_DISABLED
        assert ferry(["acls", "list", "--bootstrap-server", broker.bootstrap]) == 1
        assert "SECURITY_DISABLED" in capsys.readouterr().err
    finally:
        broker.stop()


def test_admin_clients_create_describe_and_delete_acls(tmp_path: Path) -> None:
    from confluent_kafka.admin import AclBindingFilter
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KPResourceType

    config = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "super.users": ME}
    broker = BrokerProcess(tmp_path / "data", config, tmp_path / "broker.log")
    broker.start()
    try:
        admin = _admin(broker)
        wanted = [
            AclBinding(ResourceType.TOPIC, "acme.", ResourcePatternType.PREFIXED, "User:acme",
                       "*", AclOperation.WRITE, AclPermissionType.ALLOW),
            AclBinding(ResourceType.GROUP, "acme.", ResourcePatternType.PREFIXED, "User:acme",
                       "*", AclOperation.READ, AclPermissionType.ALLOW),
            AclBinding(ResourceType.TOPIC, "acme.audit", ResourcePatternType.LITERAL,
                       "User:acme", "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY),
        ]
        for f in admin.create_acls(wanted).values():
            f.result(30)
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                      None, AclOperation.ANY, AclPermissionType.ANY)
        assert set(admin.describe_acls(everything).result(30)) == set(wanted)
        # MATCH: every ACL that applies to the topic acme.audit.
        match = AclBindingFilter(ResourceType.TOPIC, "acme.audit", ResourcePatternType.MATCH,
                                 None, None, AclOperation.ANY, AclPermissionType.ANY)
        assert len(admin.describe_acls(match).result(30)) == 2

        # kafka-python sees the same ACLs and removes the prefixed topic one.
        kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            kp.create_acls([ACL("User:beta", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                ResourcePattern(KPResourceType.TOPIC, "beta.",
                                                ACLResourcePatternType.PREFIXED))])
            found, error = kp.describe_acls(ACLFilter(
                principal="User:beta", host=None, operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ANY,
                resource_pattern=ResourcePatternFilter(KPResourceType.ANY, None,
                                                       ACLResourcePatternType.ANY)))
            assert [a.principal for a in found] == ["User:beta"] and error.errno == 0
            kp.delete_acls([ACLFilter(
                principal=None, host=None, operation=ACLOperation.ANY,
                permission_type=ACLPermissionType.ANY,
                resource_pattern=ResourcePatternFilter(KPResourceType.TOPIC, "acme.",
                                                       ACLResourcePatternType.PREFIXED))])
        finally:
            kp.close()
        remaining = set(admin.describe_acls(everything).result(30))
        assert wanted[0] not in remaining and wanted[1] in remaining and wanted[2] in remaining
        # The ACLs are stored: a restart keeps them.
        broker.stop()
        broker.start()
        assert set(_admin(broker).describe_acls(everything).result(30)) == remaining
    finally:
        broker.stop()
