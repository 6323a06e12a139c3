"""Restarts: a stopped broker keeps its data and its idempotent producers' state; a broker
killed with SIGKILL while fsyncing every append loses no acknowledged record."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka_wire import WireClient

from core.log.records import encode_batch

pytestmark = pytest.mark.integration

DEADLINE_S = 30.0
_PT = ProduceRequest.TopicProduceData


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(values) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                values.append(msg.value())
    finally:
        consumer.close()
    return values


def test_a_restarted_broker_serves_what_it_stored(broker) -> None:
    create_topic(broker.bootstrap, "kept", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "lz4"})
    sent = [b"value-%d" % i for i in range(200)]
    for i, value in enumerate(sent):
        producer.produce("kept", value, partition=i % 2)
    assert producer.flush(DEADLINE_S) == 0
    assert broker.stop() == 0
    broker.start()
    assert sorted(consume_all(broker.bootstrap, "kept", 2, len(sent))) == sorted(sent)


def test_a_restarted_broker_still_recognises_a_retried_batch(broker) -> None:
    create_topic(broker.bootstrap, "dedupe")
    client = WireClient(broker.port)
    pid = client.call(InitProducerIdRequest(transactional_id=None,
                                            transaction_timeout_ms=1000), 4).producer_id
    batches = [bytes(encode_batch([(b"k", b"v%d" % seq, [], 1_700_000_000_000)],
                                  producer_id=pid, producer_epoch=0, base_sequence=seq))
               for seq in range(3)]

    def produce(wire: WireClient, data: bytes) -> tuple[int, int]:
        request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
            _PT(name="dedupe", partition_data=[_PT.PartitionProduceData(index=0,
                                                                        records=data)])])
        result = wire.call(request, 7).responses[0].partition_responses[0]
        return result.error_code, result.base_offset

    assert [produce(client, b) for b in batches] == [(0, 0), (0, 1), (0, 2)]
    client.close()
    assert broker.stop() == 0
    broker.start()
    client = WireClient(broker.port)
    try:
        # The retry of the last batch, after the restart: its original offset, no copy.
        assert produce(client, batches[2]) == (0, 2)
        next_batch = bytes(encode_batch([(b"k", b"v3", [], 1)], producer_id=pid,
                                        producer_epoch=0, base_sequence=3))
        assert produce(client, next_batch) == (0, 3)
        newer = client.call(InitProducerIdRequest(transactional_id=None,
                                                  transaction_timeout_ms=1000), 4)
        assert newer.producer_id > pid  # ids are never handed out twice
    finally:
        client.close()


def test_sigkill_loses_no_acknowledged_record_with_fsync_per_append(broker_factory) -> None:
    broker = broker_factory({"log.flush.interval.messages": "1",
                             "group.initial.rebalance.delay.ms": "0"})
    create_topic(broker.bootstrap, "durable", 3)
    acked: list[bytes] = []
    failed: list[bytes] = []
    stop = threading.Event()

    def delivered(err: object, msg: object) -> None:
        (failed if err else acked).append(msg.value())  # type: ignore[attr-defined]

    def produce_loop() -> None:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                             "linger.ms": 1, "enable.idempotence": True,
                             "message.timeout.ms": 20000, "reconnect.backoff.ms": 50})
        i = 0
        while not stop.is_set() and i < 100_000:
            try:
                producer.produce("durable", b"record-%06d" % i, partition=i % 3,
                                 on_delivery=delivered)
                i += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.flush(DEADLINE_S)

    thread = threading.Thread(target=produce_loop, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(acked) < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked) >= 300, "the producer made no progress"
        broker.kill()
        assert broker.proc is not None and broker.proc.returncode == -signal.SIGKILL
        acked_at_kill = len(acked)
        broker.start()
        while len(acked) < acked_at_kill + 300 and time.monotonic() < deadline + DEADLINE_S:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(DEADLINE_S * 2)
    assert not thread.is_alive()
    consumed = consume_all(broker.bootstrap, "durable", 3, len(acked))
    missing = set(acked) - set(consumed)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    # Retries of batches in flight at the kill were recognised: no record twice.
    assert len(consumed) == len(set(consumed))
    assert not failed
