"""Broker behaviours librdkafka's own test suite checks, through real clients against a
``ferry broker`` subprocess: transactions refused at once, per-record produce errors,
DeleteRecords, dynamic broker configs, deprecated topic configs, delete-then-create,
authorized operations and the old Produce versions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka import KafkaProducer
from kafka.errors import KafkaError as KafkaPythonError

pytestmark = pytest.mark.integration

DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def bootstrap(module_broker) -> Iterator[str]:
    yield module_broker.bootstrap


def test_init_transactions_fails_at_once_with_a_fatal_error(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-1",
                         "transaction.timeout.ms": 60000})
    started = time.monotonic()
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(DEADLINE_S)
    # Liveness only: a retriable answer would have used up the whole DEADLINE_S.
    assert time.monotonic() - started < DEADLINE_S
    error = info.value.args[0]
    assert error.fatal()
    assert "transactions are not supported" in error.str()


def test_other_clients_fail_transactions_at_once(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TransactionalIdAuthorizationFailed
    from kafka.errors import TransactionalIdAuthorizationFailedError

    kp = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-2",
                       max_block_ms=int(DEADLINE_S * 1000))
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            kp.init_transactions()
    finally:
        kp.close()

    async def start_aiokafka() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-3")
        try:
            await asyncio.wait_for(producer.start(), DEADLINE_S)
        finally:
            await producer.stop()

    with pytest.raises(TransactionalIdAuthorizationFailed):
        asyncio.run(start_aiokafka())


def test_admin_sees_every_operation_authorized(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("authorized", 1, 1)])["authorized"].result(DEADLINE_S)
    [described] = admin.describe_topics(TopicCollection(["authorized"]),
                                        include_authorized_operations=True).values()
    assert set(described.result(DEADLINE_S).authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
        AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS}
    cluster = admin.describe_cluster(include_authorized_operations=True).result(DEADLINE_S)
    assert [n.port for n in cluster.nodes] == [int(bootstrap.rsplit(":", 1)[1])]
    assert AclOperation.IDEMPOTENT_WRITE in cluster.authorized_operations
    assert AclOperation.READ not in cluster.authorized_operations


def test_deprecated_topic_configs_are_accepted_as_kafka_3_does(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"message.format.version": "0.10.0", "message.downconversion.enable": "false"}
    admin.create_topics([NewTopic("old-format", 1, 1, config=configs)])[
        "old-format"].result(DEADLINE_S)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "old-format")
    described = admin.describe_configs([resource])[resource].result(DEADLINE_S)
    assert described["message.format.version"].value == "0.10.0"
    bad = admin.create_topics([NewTopic("bad-format", 1, 1,
                                        config={"message.format.version": "banana"})])
    with pytest.raises(KafkaException) as info:
        bad["bad-format"].result(DEADLINE_S)
    assert info.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "message.format.version" in info.value.args[0].str()


def test_topic_deleted_and_created_again_at_once(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("again", 2, 1)])["again"].result(DEADLINE_S)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(1000):
        producer.produce("again", b"old-%d" % i, partition=i % 2)
    assert producer.flush(DEADLINE_S) == 0
    for _ in range(3):
        admin.delete_topics(["again"])["again"].result(DEADLINE_S)
        admin.create_topics([NewTopic("again", 2, 1)])["again"].result(DEADLINE_S)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "again"})
    try:
        for partition in (0, 1):
            low, high = consumer.get_watermark_offsets(TopicPartition("again", partition),
                                                       DEADLINE_S)
            assert (low, high) == (0, 0)
    finally:
        consumer.close()


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, b"value-%d" % i, partition=0)
    assert producer.flush(DEADLINE_S) == 0


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), DEADLINE_S)
    finally:
        consumer.close()


def test_delete_records_moves_the_low_watermark_across_a_restart(broker_factory) -> None:
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("trimmed", 1, 1)])["trimmed"].result(DEADLINE_S)
    _produce(broker.bootstrap, "trimmed", 10)
    [done] = admin.delete_records([TopicPartition("trimmed", 0, 6)]).values()
    assert done.result(DEADLINE_S).low_watermark == 6
    [beyond] = admin.delete_records([TopicPartition("trimmed", 0, 11)]).values()
    with pytest.raises(KafkaException) as info:
        beyond.result(DEADLINE_S)
    assert info.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    assert _watermarks(broker.bootstrap, "trimmed") == (6, 10)

    broker.restart()
    assert _watermarks(broker.bootstrap, "trimmed") == (6, 10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "trimmed",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("trimmed", 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.monotonic() + DEADLINE_S
    while len(values) < 4 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"value-%d" % i for i in range(6, 10)]


def test_produce_fails_the_invalid_records_of_a_batch_by_name(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("keyed", 1, 1, config={"cleanup.policy": "compact"})])[
        "keyed"].result(DEADLINE_S)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "retries": 0})
    outcomes: dict[bytes, object] = {}
    for value, key in ((b"0", b"a"), (b"1", None), (b"2", b"c"), (b"3", None)):
        producer.produce("keyed", value, key, partition=0,
                         on_delivery=lambda err, msg: outcomes.update({msg.value(): err}))
    assert producer.flush(DEADLINE_S) == 0
    # One batch: the keyless records carry the broker's INVALID_RECORD, the others the
    # client's "an invalid record in the same batch" (KIP-467 record_errors).
    codes = {value: err.code() for value, err in outcomes.items()}
    assert codes == {b"1": KafkaError.INVALID_RECORD, b"3": KafkaError.INVALID_RECORD,
                     b"0": KafkaError._INVALID_DIFFERENT_RECORD,
                     b"2": KafkaError._INVALID_DIFFERENT_RECORD}

    kp = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=200, retries=0)
    try:
        futures = [kp.send("keyed", value=b"x", key=key, partition=0) for key in (b"a", None)]
        with pytest.raises(KafkaPythonError) as keyless:
            futures[1].get(DEADLINE_S)
        assert "without key" in str(keyless.value)
        with pytest.raises(KafkaPythonError) as keyed:
            futures[0].get(DEADLINE_S)
        assert "without key" not in str(keyed.value)
    finally:
        kp.close()


def test_dynamic_broker_configs_are_accepted_applied_and_kept(broker_factory) -> None:
    broker = broker_factory({"log.retention.ms": "3600000"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("dyn", 1, 1)])["dyn"].result(DEADLINE_S)
    this_broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    this_broker.add_incremental_config(ConfigEntry(
        "log.retention.ms", "120000", incremental_operation=AlterConfigOpType.SET))
    this_broker.add_incremental_config(ConfigEntry(
        "sasl.kerberos.min.time.before.relogin", "58000",
        incremental_operation=AlterConfigOpType.SET))
    admin.incremental_alter_configs([this_broker])[this_broker].result(DEADLINE_S)

    read_only = ConfigResource(ConfigResource.Type.BROKER, "0")
    read_only.add_incremental_config(ConfigEntry(
        "node.id", "5", incremental_operation=AlterConfigOpType.SET))
    with pytest.raises(KafkaException) as info:
        admin.incremental_alter_configs([read_only])[read_only].result(DEADLINE_S)
    assert "node.id" in info.value.args[0].str()

    def described() -> dict[str, object]:
        resources = [ConfigResource(ConfigResource.Type.BROKER, "0"),
                     ConfigResource(ConfigResource.Type.TOPIC, "dyn")]
        client = AdminClient({"bootstrap.servers": broker.bootstrap})
        futures = client.describe_configs(resources)
        broker_configs, topic_configs = (futures[r].result(DEADLINE_S) for r in resources)
        return {"broker": broker_configs["log.retention.ms"],
                "relogin": broker_configs["sasl.kerberos.min.time.before.relogin"],
                "topic": topic_configs["retention.ms"]}

    for _ in range(2):  # before and after a restart
        seen = described()
        assert (seen["broker"].value, seen["broker"].source) == (
            "120000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert seen["relogin"].value == "58000"
        assert seen["topic"].value == "120000"  # the topic follows the broker default
        broker.restart()


def test_clients_speaking_old_produce_versions_are_served(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("old-clients", 1, 1)])["old-clients"].result(DEADLINE_S)
    sent = []
    # kafka-python pinned to 0.10 (Produce v2, format v1) and 0.9 (Produce v1, format v0).
    for api_version, compression in (((0, 10), None), ((0, 10), "gzip"), ((0, 9), None)):
        kp = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version,
                           compression_type=compression)
        try:
            value = f"kafka-python {api_version} {compression}".encode()
            kp.send("old-clients", key=b"k", value=value, partition=0).get(DEADLINE_S)
            sent.append(value)
        finally:
            kp.close()
    # librdkafka without ApiVersions, as with a broker older than 0.10.
    producer = Producer({"bootstrap.servers": bootstrap, "api.version.request": False,
                         "broker.version.fallback": "0.9.0"})
    errors: list[object] = []
    producer.produce("old-clients", b"librdkafka 0.9.0", b"k", partition=0,
                     on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(DEADLINE_S) == 0
    assert errors == [None]
    sent.append(b"librdkafka 0.9.0")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "old-clients"})
    consumer.assign([TopicPartition("old-clients", 0, OFFSET_BEGINNING)])
    received = []
    deadline = time.monotonic() + DEADLINE_S
    while len(received) < len(sent) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            received.append(message.value())
    consumer.close()
    assert received == sent
