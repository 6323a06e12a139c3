"""The registry's ``/metrics`` and ``/health`` on its REST port: a real ``RegistryService``
on ``embedded:`` driven by the real Confluent client, then scraped; health during startup
(an unreachable log), in steady state, and with an unusable ``_schemas`` topic."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from broker_process import free_port
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from metrics_scrape import health, scrape

from core.backends import open_backend
from schema_registry.errors import RegistryConfigError
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration


def _avro(*fields: tuple[str, str]) -> Schema:
    return Schema(json.dumps({"type": "record", "name": "User", "fields": [
        {"name": n, "type": t, **({"default": None} if t == ["null", "string"] else {})}
        for n, t in fields]}), "AVRO")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RegistryService]:
    svc = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                          config={"kafkagroup.heartbeat.interval.ms": "500"})
    svc.start(wait_ready=30)
    yield svc
    svc.stop()


def test_requests_schemas_and_compatibility_failures(service):
    client = SchemaRegistryClient({"url": service.url})
    client.register_schema("users-value", _avro(("name", "string")))
    client.register_schema("users-value", _avro(("name", "string"),
                                                ("email", ["null", "string"])))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("users-value", _avro(("age", "int")))  # no default: BACKWARD
    assert refused.value.http_status_code == 409
    check = requests.post(f"{service.url}/compatibility/subjects/users-value/versions/latest",
                          json={"schema": _avro(("age", "int")).schema_str}, timeout=10)
    assert check.json() == {"is_compatible": False}
    assert requests.get(f"{service.url}/subjects", timeout=10).json() == ["users-value"]

    metrics = scrape(service.url)
    assert metrics.value("ferry_registry_subjects") == 1
    assert metrics.value("ferry_registry_schemas") == 2
    assert metrics.value("ferry_registry_compatibility_failures_total",
                         operation="register") == 1
    assert metrics.value("ferry_registry_compatibility_failures_total",
                         operation="check") == 1
    registered = metrics.matching("ferry_registry_requests_total", method="POST", code="200")
    register = {labels: v for labels, v in registered.items()
                if dict(labels)["endpoint"].endswith("register")}
    assert sum(register.values()) == 2, registered
    assert sum(metrics.matching("ferry_registry_requests_total", method="POST",
                                code="409").values()) == 1
    assert sum(metrics.matching("ferry_registry_requests_total", method="GET",
                                code="200").values()) >= 1
    assert metrics.value("ferry_registry_is_leader") == 1
    assert health(service.url) == (200, {
        "status": "healthy",
        "message": "Schema Registry has read the schemas topic and serves requests."})


def test_health_is_starting_while_the_log_is_unreachable(tmp_path: Path):
    service = RegistryService(f"kafka://127.0.0.1:{free_port()}", listen="127.0.0.1:0",
                              config={"kafkastore.timeout.ms": "1000"})
    try:
        service.start()
        status, body = health(service.url)
        assert (status, body["status"]) == (503, "starting"), body
        assert scrape(service.url).value("ferry_registry_ready") == 0
    finally:
        service.stop()


def test_health_is_unhealthy_with_an_unusable_schemas_topic(tmp_path: Path):
    url = f"embedded:{tmp_path / 'log'}"
    with open_backend(url) as backend:
        backend.create_topic("_schemas", 3, {"cleanup.policy": "compact"})
    service = RegistryService(url, listen="127.0.0.1:0")
    try:
        with pytest.raises(RegistryConfigError):
            service.start(wait_ready=30)
        status, body = health(service.url)
        assert (status, body["status"]) == (500, "unhealthy")
        assert "3 partitions" in body["message"]
    finally:
        service.stop()
