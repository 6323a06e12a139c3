"""``ferry broker --metrics``: a real broker process scraped after a real client workload.

confluent-kafka (librdkafka) produces a known number of records and a consumer group
commits part way; the scrape shows the records in, the bytes stored, and the group's lag
(the unconsumed count) and membership, as the broker computes them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess, free_port
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from metrics_scrape import health, scrape

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    directory = tmp_path_factory.mktemp("metrics-broker")
    port = free_port()
    broker = BrokerProcess(directory / "data", {"group.initial.rebalance.delay.ms": "0",
                                                "offsets.topic.num.partitions": "2"},
                           directory / "broker.log",
                           extra_args=["--metrics", f"127.0.0.1:{port}"])
    broker.start()
    try:
        yield broker, f"http://127.0.0.1:{port}"
    finally:
        broker.stop()


def _create(broker: BrokerProcess, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def test_records_in_and_group_lag_after_a_client_workload(observed):
    broker, url = observed
    assert health(url)[0] == 200
    _create(broker, "orders", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(100):
        producer.produce("orders", b"order-%d" % i, partition=i % 2)
    assert producer.flush(30) == 0

    metrics = scrape(url)
    assert metrics.value("kafka_server_brokertopicmetrics_messagesin_total",
                         topic="orders") == 100
    stored = sum(metrics.matching("kafka_log_log_size", topic="orders").values())
    assert metrics.value("kafka_server_brokertopicmetrics_bytesin_total",
                         topic="orders") == stored > 0

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition("orders", 0, 20),
                                 TopicPartition("orders", 1, 50)], asynchronous=False)
        metrics = scrape(url)
        assert metrics.value("kafka_consumergroup_members", consumergroup="billing") == 1
    finally:
        consumer.close()
    assert metrics.value("kafka_consumergroup_lag", consumergroup="billing", topic="orders",
                         partition="0") == 30
    assert metrics.value("kafka_consumergroup_lag", consumergroup="billing", topic="orders",
                         partition="1") == 0
    assert metrics.value("kafka_consumergroup_lag_sum", consumergroup="billing",
                         topic="orders") == 30
    assert metrics.value("ferry_consumergroup_lag_seconds", consumergroup="billing",
                         topic="orders", partition="0") >= 0
    assert metrics.value("kafka_network_requestmetrics_requests_total", request="Produce",
                         version="9") >= 1


def test_a_taken_metrics_port_is_one_error_line(tmp_path: Path):
    import socket
    import subprocess
    import sys

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "core.cli", "broker", "--data-dir", str(tmp_path / "d"),
             "--listen", f"127.0.0.1:{free_port()}", "--metrics", f"127.0.0.1:{port}"],
            capture_output=True, timeout=60)
    stderr = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1].startswith("ferry: error:")
    assert f"127.0.0.1:{port}" in stderr.strip().splitlines()[-1]
