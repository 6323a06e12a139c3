"""The Grafana dashboard and Prometheus alert rules in docker/observability use only metric
names that Ferry's services really return: a broker (``ferry broker --metrics``), a
Connect worker and a Schema Registry are started, given a small workload, and scraped;
every ``kafka_*``/``ferry_*`` name of every dashboard query and alert expression must be
among the scraped samples. Also checks the files' structure."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from broker_process import BrokerProcess, free_port
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from metrics_scrape import scrape
from rt_test_connectors import Harness, wait_for

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

ASSETS = Path(__file__).resolve().parents[3] / "docker" / "observability"
_NAME = re.compile(r"\b(?:kafka|ferry)_[a-z0-9_]+\b")


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads((ASSETS / "grafana-dashboard.json").read_text())
    exprs = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        exprs += [target["expr"] for target in panel["targets"]]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    return exprs


def _alert_exprs() -> list[str]:
    rules = yaml.safe_load((ASSETS / "alerts.yml").read_text())
    exprs = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "labels", "annotations"} <= set(rule), rule
            assert rule["labels"]["severity"] in ("info", "warning", "critical"), rule
            assert rule["annotations"]["summary"], rule
            exprs.append(rule["expr"])
    return exprs


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[BrokerProcess, str]]:
    port = free_port()
    process = BrokerProcess(tmp_path / "broker", {"group.initial.rebalance.delay.ms": "0"},
                            tmp_path / "broker.log",
                            extra_args=["--metrics", f"127.0.0.1:{port}",
                                        "-o", "auto.create.topics.enable=true"])
    process.start()
    yield process, f"http://127.0.0.1:{port}"
    process.stop()


def _broker_names(broker: BrokerProcess, url: str) -> set[str]:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("assets", b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "dash",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("assets", 0, 0)])
        assert consumer.consume(5, timeout=30)
        consumer.commit(offsets=[TopicPartition("assets", 0, 4)], asynchronous=False)
    finally:
        consumer.close()
    return scrape(url).names()


def _connect_names(tmp_path: Path) -> set[str]:
    harness = Harness(tmp_path / "connect-log")
    try:
        url = harness.rest()
        harness.create("dash-src", {"connector.class": "ScriptedSource", "topic": "o",
                                    "count": "3"})
        harness.wait_task("dash-src", "RUNNING")
        wait_for(lambda: scrape(url).value("kafka_connect_source_task_source_record_write_total",
                                           connector="dash-src", task="0") == 3, "3 writes")
        return scrape(url).names()
    finally:
        harness.close()


def _registry_names(tmp_path: Path) -> set[str]:
    service = RegistryService(f"embedded:{tmp_path / 'sr-log'}", listen="127.0.0.1:0")
    try:
        service.start(wait_ready=30)
        SchemaRegistryClient({"url": service.url}).register_schema(
            "dash-value", Schema('{"type": "string"}', "AVRO"))
        return scrape(service.url).names()
    finally:
        service.stop()


def test_dashboard_and_alerts_use_only_scraped_names(broker, tmp_path: Path):
    names = (_broker_names(*broker) | _connect_names(tmp_path) | _registry_names(tmp_path))
    used = {name for expr in _dashboard_exprs() + _alert_exprs()
            for name in _NAME.findall(expr)}
    assert len(used) > 30  # the files really query the services
    assert sorted(used - names) == []


def test_prometheus_config_loads_the_rules_and_scrapes_every_service():
    config = yaml.safe_load((ASSETS / "prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    targets = {job["job_name"]: job["static_configs"][0]["targets"]
               for job in config["scrape_configs"]}
    # The services of docker/compose.yaml (tests/integration/demo/test_compose.py checks
    # they exist there).
    assert targets == {"ferry-broker": ["broker1:9404", "broker2:9404", "broker3:9404"],
                       "ferry-connect": ["connect1:8083", "connect2:8083"],
                       "ferry-schema-registry": ["registry:8081"]}
