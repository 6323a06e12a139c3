"""SCRAM-SHA-256/512: credentials set with Kafka's admin API (confluent-kafka and
kafka-python), stored on disk across a restart, and used by librdkafka, kafka-python and
aiokafka to log in; DescribeUserScramCredentials and Kafka's error codes for bad changes."""

from __future__ import annotations

import json
import time

import pytest
from client_sends import aiokafka_send, kafka_python_send
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def scram_broker(secure_broker):
    broker, ports = secure_broker(
        {"SASL": "SASL_PLAINTEXT"},
        {"listener.name.sasl.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
         "connection.failed.authentication.delay.ms": "10",
         "auto.create.topics.enable": "true"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for user, mechanism in (("alice", ScramMechanism.SCRAM_SHA_256),
                            ("bob", ScramMechanism.SCRAM_SHA_512)):
        futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            user, ScramCredentialInfo(mechanism, 8192), f"{user}-pw".encode(),
            b"salt-" + user.encode())])
        for future in futures.values():
            future.result(20)
    return broker, f"127.0.0.1:{ports['SASL']}", admin


def _conf(bootstrap: str, user: str, password: str, mechanism: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def _produce(conf: dict, topic: str) -> list:
    """The errors librdkafka reports while it produces one record: [] once the record is
    delivered without any. A refused login is reported at once, and librdkafka would only
    keep retrying it until message.timeout.ms, so the first authentication error ends it."""
    errors: list = []
    producer = Producer({**conf, "error_cb": errors.append, "message.timeout.ms": 8000})
    producer.produce(topic, b"x")
    deadline = time.monotonic() + 10
    while len(producer) and time.monotonic() < deadline:
        producer.poll(0.1)
        if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            break
    return errors if len(producer) or errors else []


def test_librdkafka_scram_256_and_512(scram_broker):
    _, bootstrap, _ = scram_broker
    assert _produce(_conf(bootstrap, "alice", "alice-pw", "SCRAM-SHA-256"), "s256") == []
    assert _produce(_conf(bootstrap, "bob", "bob-pw", "SCRAM-SHA-512"), "s512") == []


def test_scram_wrong_password_and_wrong_mechanism(scram_broker):
    broker, bootstrap, _ = scram_broker
    errors = _produce(_conf(bootstrap, "alice", "guess", "SCRAM-SHA-256"), "nope")
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors)
    # alice has no SCRAM-SHA-512 credential
    errors = _produce(_conf(bootstrap, "alice", "alice-pw", "SCRAM-SHA-512"), "nope")
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors)
    assert "guess" not in broker.output()


def test_describe_and_delete_and_errors(scram_broker):
    broker, bootstrap, admin = scram_broker
    described = admin.describe_user_scram_credentials().result(20)
    assert {u: [(i.mechanism, i.iterations) for i in d.scram_credential_infos]
            for u, d in described.items()} == {
        "alice": [(ScramMechanism.SCRAM_SHA_256, 8192)],
        "bob": [(ScramMechanism.SCRAM_SHA_512, 8192)]}
    too_few = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b"pw")])
    with pytest.raises(Exception, match=r"UNACCEPTABLE_CREDENTIAL|iterations"):
        too_few["carol"].result(20)
    missing = admin.alter_user_scram_credentials([UserScramCredentialDeletion(
        "carol", ScramMechanism.SCRAM_SHA_256)])
    with pytest.raises(Exception, match=r"RESOURCE_NOT_FOUND|does not exist"):
        missing["carol"].result(20)
    done = admin.alter_user_scram_credentials([UserScramCredentialDeletion(
        "bob", ScramMechanism.SCRAM_SHA_512)])
    done["bob"].result(20)
    errors = _produce(_conf(bootstrap, "bob", "bob-pw", "SCRAM-SHA-512"), "gone")
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors)
    # stored on disk: salts and keys, never the password; survives a restart
    stored = json.loads((broker.data_dir / "scram-credentials.json").read_text())
    assert set(stored["users"]) == {"alice"}
    assert "alice-pw" not in json.dumps(stored)
    broker.restart()
    assert _produce(_conf(bootstrap, "alice", "alice-pw", "SCRAM-SHA-256"), "again") == []


def test_kafka_python_and_aiokafka_scram(scram_broker):
    _, bootstrap, _ = scram_broker
    kafka_python_send("kp-scram", bootstrap_servers=bootstrap,
                      security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                      sasl_plain_username="bob", sasl_plain_password="bob-pw")
    aiokafka_send("aio-scram", bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                  sasl_plain_password="alice-pw")
