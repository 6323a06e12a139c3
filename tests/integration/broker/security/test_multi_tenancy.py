"""The multi-tenancy recipe of docs/security.md, end to end with real SASL/PLAIN users.

Two tenants, ``acme`` and ``globex``, share one broker. Each has PREFIXED ACLs on its own
topics, groups and transactional ids, and a per-user byte-rate quota. The operator
(``User:admin``, a super user) sets everything up with ``ferry acls`` and ``ferry quotas``
over SASL (``--command-config``). Then each tenant, through confluent-kafka and
kafka-python, can use its own resources but cannot read, write, alter, delete or even
list the other's topics and groups. A tenant over its byte rate is throttled, as its own
client reports, while the other tenant producing at the same time is not.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka import KafkaConsumer

from core.cli.main import main as ferry

pytestmark = pytest.mark.integration

PASSWORDS = {"admin": "admin-secret", "acme": "acme-secret", "globex": "globex-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
RECORD = b"r" * 10_000


def sasl(bootstrap: str, user: str, **extra: object) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": PASSWORDS[user], **extra}


@pytest.fixture
def tenants(secure_broker, tmp_path: Path):
    _broker, ports = secure_broker({"SASL": "SASL_PLAINTEXT"}, {
        "listener.name.sasl.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl.sasl.enabled.mechanisms": "PLAIN",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "auto.create.topics.enable": "false",
        "quota.window.num": "3"})
    bootstrap = f"127.0.0.1:{ports['SASL']}"
    admin_config = tmp_path / "admin.properties"
    admin_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";\n')
    common = ["--bootstrap-server", bootstrap, "--command-config", str(admin_config)]
    for tenant in ("acme", "globex"):
        for resource in ("--topic", "--group", "--transactional-id"):
            assert ferry(["acls", "add", *common, "--allow-principal", f"User:{tenant}",
                          "--operation", "All", resource, f"{tenant}.",
                          "--resource-pattern-type", "prefixed"]) == 0
    assert ferry(["quotas", "alter", *common, "--user", "acme", "--add-config",
                  "producer_byte_rate=100000,consumer_byte_rate=100000"]) == 0
    admin = AdminClient(sasl(bootstrap, "admin"))
    for f in admin.create_topics([NewTopic(t, 1) for t in
                                  ("acme.orders", "globex.orders", "globex.audit")]).values():
        f.result(30)
    # globex has a consumer group with committed offsets.
    p = Producer(sasl(bootstrap, "globex"))
    p.produce("globex.orders", b"globex-secret-order")
    assert p.flush(30) == 0
    _first_message(bootstrap, "globex", "globex.billing", "globex.orders", commit=True)
    return bootstrap


def _first_message(bootstrap: str, user: str, group: str, topic: str, *,
                   errors: bool = False, commit: bool = False) -> Message | None:
    """The first record (with ``errors``: or error) that ``user``'s consumer in ``group``
    polls from ``topic`` within 30 s; ``commit`` commits its offsets before it closes."""
    c = Consumer(sasl(bootstrap, user, **{"group.id": group, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and (errors or msg.error() is None):
                return msg
        return None
    finally:
        if commit:
            c.commit(asynchronous=False)
        c.close()


def _code(future) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as info:
        future.result(30)
    return info.value.args[0].code()


def test_a_tenant_uses_its_own_topics_and_groups(tenants):
    p = Producer(sasl(tenants, "acme"))
    p.produce("acme.orders", b"acme-order")
    assert p.flush(30) == 0
    got = _first_message(tenants, "acme", "acme.billing", "acme.orders")
    assert got is not None and got.value() == b"acme-order"
    admin = AdminClient(sasl(tenants, "acme"))
    admin.create_topics([NewTopic("acme.new", 1)])["acme.new"].result(30)


def test_a_tenant_cannot_see_the_other_tenants_topics_or_groups(tenants):
    admin = AdminClient(sasl(tenants, "acme"))
    topics = set(admin.list_topics(timeout=30).topics)
    assert "acme.orders" in topics
    assert not any(t.startswith("globex.") for t in topics), topics
    groups = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert "globex.billing" not in groups
    described = admin.describe_consumer_groups(["globex.billing"])["globex.billing"]
    assert _code(described) == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_a_tenant_cannot_read_write_alter_or_delete_the_others(tenants):
    admin = AdminClient(sasl(tenants, "acme"))
    # read
    msg = _first_message(tenants, "acme", "acme.spy", "globex.orders", errors=True)
    assert msg is not None, "acme's consumer got no error"
    assert msg.error() is not None, "acme read a globex record"
    assert msg.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # ... nor through globex's group
    kp = KafkaConsumer(bootstrap_servers=tenants, security_protocol="SASL_PLAINTEXT",
                       sasl_mechanism="PLAIN", sasl_plain_username="acme",
                       sasl_plain_password=PASSWORDS["acme"], group_id="globex.billing",
                       consumer_timeout_ms=5000)
    try:
        from kafka import TopicPartition as KTP
        from kafka.errors import GroupAuthorizationFailedError

        kp.assign([KTP("acme.orders", 0)])
        with pytest.raises(GroupAuthorizationFailedError):
            kp.committed(KTP("acme.orders", 0))
    finally:
        kp.close()
    # write
    results: dict[str, KafkaError | None] = {}
    p = Producer(sasl(tenants, "acme", **{"message.timeout.ms": 10000}))
    p.produce("globex.orders", b"x", on_delivery=lambda err, msg: results.update(w=err))
    p.flush(30)
    assert results["w"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # create in the other's namespace, alter, delete
    assert _code(admin.create_topics([NewTopic("globex.evil", 1)])["globex.evil"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    resource = ConfigResource(ConfigResource.Type.TOPIC, "globex.orders", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    assert _code(admin.incremental_alter_configs([resource])[resource]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _code(admin.delete_topics(["globex.orders"])["globex.orders"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _code(admin.delete_consumer_groups(["globex.billing"])["globex.billing"]) == \
        KafkaError.GROUP_AUTHORIZATION_FAILED
    # globex's data and group are intact.
    globex = AdminClient(sasl(tenants, "globex"))
    assert "globex.orders" in globex.list_topics(timeout=30).topics
    assert "globex.billing" in {
        g.group_id for g in globex.list_consumer_groups().result(30).valid}


def _produce(bootstrap: str, user: str, topic: str, count: int) -> int:
    """The largest throttle time (ms) librdkafka's statistics reported."""
    worst = [0]

    def stats(text: str) -> None:
        for b in json.loads(text)["brokers"].values():
            worst[0] = max(worst[0], b["throttle"]["max"])

    p = Producer(sasl(bootstrap, user, **{"linger.ms": 0, "batch.size": 20_000,
                                          "statistics.interval.ms": 100,
                                          "stats_cb": stats}))
    for _ in range(count):
        p.produce(topic, RECORD)
        p.poll(0)
    assert p.flush(60) == 0
    for _ in range(3):
        p.poll(0.15)
    return worst[0]


def test_a_tenant_over_its_byte_rate_is_throttled_and_the_other_is_not(tenants):
    results: dict[str, int] = {}
    other = threading.Thread(target=lambda: results.__setitem__(
        "globex", _produce(tenants, "globex", "globex.audit", 50)))
    other.start()
    results["acme"] = _produce(tenants, "acme", "acme.orders", 50)
    other.join(60)
    assert results["acme"] > 0, "acme went over its quota unthrottled"
    assert results["globex"] == 0, "globex has no quota and was throttled"
