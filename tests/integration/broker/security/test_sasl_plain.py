"""SASL/PLAIN over SASL_PLAINTEXT with the real clients, and its refusals.

Users come from the listener's JAAS config and from a users file that is edited while
the broker runs (no restart).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

pytestmark = pytest.mark.integration

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret";')


@pytest.fixture
def plain_broker(secure_broker, tmp_path):
    users = tmp_path / "plain-users.properties"
    users.write_text("carol=carol-secret\n")
    broker, ports = secure_broker(
        {"SASL": "SASL_PLAINTEXT"},
        {"listener.name.sasl.plain.sasl.jaas.config": JAAS,
         "listener.name.sasl.sasl.enabled.mechanisms": "PLAIN",
         "sasl.plain.users.file": str(users),
         "connection.failed.authentication.delay.ms": "10",
         "auto.create.topics.enable": "true"})
    return broker, f"127.0.0.1:{ports['SASL']}", users


def _conf(bootstrap: str, user: str, password: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": password}


def _round_trip(conf: dict, topic: str) -> list[bytes]:
    producer = Producer(conf)
    for i in range(3):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
            if len(values) == 3:
                break
    finally:
        consumer.close()
    return values


def test_librdkafka_plain_round_trip(plain_broker):
    _, bootstrap, users = plain_broker
    assert _round_trip(_conf(bootstrap, "alice", "alice-secret"), "plain-a") == \
        [b"v0", b"v1", b"v2"]
    assert _round_trip(_conf(bootstrap, "carol", "carol-secret"), "plain-c") == \
        [b"v0", b"v1", b"v2"]
    users.write_text("carol=carol-secret\ndave=dave-secret-2\n")  # picked up at once
    assert _round_trip(_conf(bootstrap, "dave", "dave-secret-2"), "plain-d") == \
        [b"v0", b"v1", b"v2"]


def auth_errors(conf: dict, polls: int = 40) -> list:
    """The errors librdkafka reports (error_cb) while it tries to connect with ``conf``."""
    errors: list = []
    producer = Producer({**conf, "error_cb": errors.append})
    for _ in range(polls):
        producer.poll(0.25)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    return errors


def test_librdkafka_wrong_password_is_refused(plain_broker):
    broker, bootstrap, _ = plain_broker
    errors = auth_errors(_conf(bootstrap, "alice", "not-her-password"))
    failures = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert failures and "Invalid username or password" in failures[0].str()
    log = broker.output()
    assert "Failed authentication with 127.0.0.1" in log
    assert "not-her-password" not in log


def test_librdkafka_unknown_mechanism_is_refused(plain_broker):
    _, bootstrap, _ = plain_broker
    conf = {**_conf(bootstrap, "alice", "alice-secret"), "sasl.mechanism": "SCRAM-SHA-256"}
    failures = [e for e in auth_errors(conf) if e.code() == KafkaError._AUTHENTICATION]
    assert failures and "SCRAM-SHA-256" in failures[0].str()


def test_kafka_python_plain(plain_broker):
    from kafka import KafkaConsumer, KafkaProducer

    _, bootstrap, _ = plain_broker
    conf = {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": "admin",
            "sasl_plain_password": "admin-secret"}
    producer = KafkaProducer(**conf)
    producer.send("kp-plain", b"hello").get(timeout=20)
    producer.close()
    consumer = KafkaConsumer("kp-plain", auto_offset_reset="earliest",
                             consumer_timeout_ms=10000, **conf)
    values = [m.value for m in consumer]
    consumer.close()
    assert values[:1] == [b"hello"]


def test_aiokafka_plain(plain_broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    _, bootstrap, _ = plain_broker
    conf = {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
            "sasl_plain_password": "alice-secret"}

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        try:
            await producer.send_and_wait("aio-plain", b"hi")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("aio-plain", auto_offset_reset="earliest", **conf)
        await consumer.start()
        try:
            msg = await asyncio.wait_for(consumer.getone(), 20)
        finally:
            await consumer.stop()
        return [msg.value]

    assert asyncio.run(run()) == [b"hi"]


def test_librdkafka_reauthenticates_before_the_session_ends(secure_broker):
    """KIP-368 with a real client: sessions of 2 s, a producer kept busy for 7 s on one
    connection re-authenticates instead of being disconnected."""
    import re
    import time
    import urllib.request

    from broker_process import free_port

    metrics = free_port()
    _, ports = secure_broker(
        {"SASL": "SASL_PLAINTEXT"},
        {"listener.name.sasl.plain.sasl.jaas.config": JAAS,
         "connections.max.reauth.ms": "2000", "auto.create.topics.enable": "true"},
        extra_args=["--metrics", f"127.0.0.1:{metrics}"])
    errors: list = []
    producer = Producer({**_conf(f"127.0.0.1:{ports['SASL']}", "alice", "alice-secret"),
                         "error_cb": errors.append})
    delivered: list = []
    deadline = time.monotonic() + 7
    while time.monotonic() < deadline:
        producer.produce("reauth", b"v", on_delivery=lambda err, msg: delivered.append(err))
        producer.poll(0.2)
    assert producer.flush(20) == 0
    assert delivered and all(err is None for err in delivered)
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10).read()
    match = re.search(rb'kafka_server_socket_server_metrics_successful_reauthentication_total'
                      rb'\{listener="SASL"\} (\S+)', text)
    assert match and float(match.group(1)) >= 2, text[-1500:]
