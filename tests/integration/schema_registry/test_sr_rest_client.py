"""The registry against Confluent's own Python client, ``SchemaRegistryClient``.

Each test starts a real ``RegistryService`` (waitress on a free port) over an ``embedded:``
log in a temporary directory, and talks to it only through the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration


def _avro(*fields: tuple[str, str]) -> Schema:
    body = [{"name": name, "type": kind} for name, kind in fields]
    return Schema(json.dumps({"type": "record", "name": "User", "fields": body}), "AVRO")


V1 = _avro(("name", "string"))
V2 = Schema(json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}]}), "AVRO")
NO_DEFAULT = _avro(("name", "string"), ("email", "string"))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RegistryService]:
    svc = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                          config={"kafkagroup.heartbeat.interval.ms": "500"})
    svc.start(wait_ready=30)
    assert svc.ready
    yield svc
    svc.stop()


@pytest.fixture
def client(service: RegistryService) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": service.url})


def _fresh(service: RegistryService) -> SchemaRegistryClient:
    """A client with empty caches, so every answer comes from the server."""
    return SchemaRegistryClient({"url": service.url})


def test_register_returns_ids_and_reuses_them(service, client):
    first = client.register_schema("users-value", V1)
    second = client.register_schema("users-value", V2)
    assert (first, second) == (1, 2)
    again = _fresh(service)
    assert again.register_schema("users-value", V1) == 1
    assert again.register_schema("other-value", V1) == 1  # same schema, other subject
    assert again.get_versions("other-value") == [1]


def test_get_schema_by_id_and_its_subjects_and_versions(service, client):
    schema_id = client.register_schema("a-value", V1)
    client.register_schema("b-value", V1)
    fresh = _fresh(service)
    fetched = fresh.get_schema(schema_id)
    assert json.loads(fetched.schema_str) == json.loads(V1.schema_str)
    assert fetched.schema_type == "AVRO"
    assert fresh.get_subjects_by_schema_id(schema_id) == ["a-value", "b-value"]
    versions = fresh.get_schema_versions(schema_id)
    assert [(v.subject, v.version) for v in versions] == [("a-value", 1), ("b-value", 1)]
    with pytest.raises(SchemaRegistryError) as info:
        fresh.get_schema(999)
    assert (info.value.http_status_code, info.value.error_code) == (404, 40403)


def test_lookup_matches_the_parsed_schema_not_the_text(service, client):
    client.register_schema("users-value", V1)
    client.register_schema("users-value", V2)
    spaced = Schema(json.dumps(json.loads(V2.schema_str), indent=4), "AVRO")
    found = _fresh(service).lookup_schema("users-value", spaced)
    assert (found.subject, found.version, found.schema_id) == ("users-value", 2, 2)
    with pytest.raises(SchemaRegistryError) as info:
        _fresh(service).lookup_schema("users-value", NO_DEFAULT)
    assert info.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as info:
        _fresh(service).lookup_schema("nobody-value", V1)
    assert info.value.error_code == 40401


def test_versions_latest_and_listing(service, client):
    client.register_schema("users-value", V1)
    client.register_schema("users-value", V2)
    fresh = _fresh(service)
    assert fresh.get_versions("users-value") == [1, 2]
    latest = fresh.get_latest_version("users-value")
    assert (latest.version, latest.schema_id) == (2, 2)
    assert fresh.get_version("users-value", 1).schema_id == 1
    assert fresh.get_subjects() == ["users-value"]
    assert fresh.get_schema_types() == ["JSON", "AVRO"]


def test_incompatible_schema_is_rejected_with_each_reason(client):
    client.register_schema("users-value", V1)
    with pytest.raises(SchemaRegistryError) as info:
        client.register_schema("users-value", NO_DEFAULT)
    assert (info.value.http_status_code, info.value.error_code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in info.value.error_message
    assert "'email'" in info.value.error_message
    assert client.test_compatibility("users-value", NO_DEFAULT) is False
    assert client.test_compatibility("users-value", V2) is True
    assert client.test_compatibility_all_versions("users-value", V2) is True


def test_compatibility_config_global_and_per_subject(service, client):
    assert client.get_compatibility() == "BACKWARD"
    client.register_schema("users-value", V1)
    client.set_compatibility("users-value", "NONE")
    assert client.get_compatibility("users-value") == "NONE"
    assert client.register_schema("users-value", NO_DEFAULT) == 2
    client.set_compatibility(level="FULL")
    assert _fresh(service).get_compatibility() == "FULL"
    assert client.delete_config("users-value").compatibility_level == "NONE"
    with pytest.raises(SchemaRegistryError) as info:
        client.get_compatibility("users-value")
    assert info.value.error_code == 40408


def test_modes_readonly_and_import_block_plain_registrations(client):
    assert client.get_global_mode() == "READWRITE"
    assert client.update_global_mode("READONLY") == "READONLY"
    with pytest.raises(SchemaRegistryError) as info:
        client.register_schema("users-value", V1)
    assert info.value.error_code == 42205
    assert "read-only" in info.value.error_message
    assert client.update_global_mode("IMPORT") == "IMPORT"
    with pytest.raises(SchemaRegistryError) as info:  # IMPORT wants explicit ids
        client.register_schema("users-value", V1)
    assert info.value.error_code == 42205
    client.update_global_mode("READWRITE")
    client.register_schema("users-value", V1)
    client.update_mode("users-value", "READONLY")
    assert client.get_mode("users-value") == "READONLY"
    assert client.delete_mode("users-value") == "READONLY"


def test_soft_then_permanent_deletes(service, client):
    client.register_schema("users-value", V1)
    client.register_schema("users-value", V2)
    assert client.delete_version("users-value", 1) == 1
    assert client.get_versions("users-value") == [2]
    with pytest.raises(SchemaRegistryError) as info:
        client.delete_version("users-value", 2, permanent=True)
    assert info.value.error_code == 40407
    assert client.delete_version("users-value", 1, permanent=True) == 1
    assert client.delete_subject("users-value") == [2]
    assert client.get_subjects() == []
    assert client.get_subjects(deleted=True) == ["users-value"]
    with pytest.raises(SchemaRegistryError) as info:
        client.delete_subject("users-value")
    assert info.value.error_code == 40404
    assert client.delete_subject("users-value", permanent=True) == [2]
    assert client.get_subjects(deleted=True) == []
    with pytest.raises(SchemaRegistryError) as info:
        _fresh(service).get_schema(2)
    assert info.value.error_code == 40403
    # the next schema gets a new id, never a deleted one
    assert client.register_schema("users-value", NO_DEFAULT) == 3


def test_subject_names_with_slashes_and_escapes(service, client):
    subject = "team/orders%2Fv1/value"
    schema_id = client.register_schema(subject, V1)
    fresh = _fresh(service)
    assert fresh.get_subjects() == [subject]
    assert fresh.get_versions(subject) == [1]
    assert fresh.get_latest_version(subject).subject == subject
    assert fresh.lookup_schema(subject, V1).schema_id == schema_id
    fresh.set_compatibility(subject, "FULL")
    assert fresh.get_compatibility(subject) == "FULL"
    assert fresh.delete_subject(subject) == [1]


def test_references_between_subjects(service, client):
    address = Schema(json.dumps({"type": "record", "name": "Address", "namespace": "shop",
                                 "fields": [{"name": "city", "type": "string"}]}), "AVRO")
    address_id = client.register_schema("address-value", address)
    customer = Schema(json.dumps({"type": "record", "name": "Customer", "namespace": "shop",
                                  "fields": [{"name": "home", "type": "shop.Address"}]}),
                      "AVRO", [SchemaReference("shop.Address", "address-value", 1)])
    customer_id = client.register_schema("customer-value", customer)
    fresh = _fresh(service)
    assert fresh.get_referenced_by("address-value", 1) == [customer_id]
    refs = fresh.get_schema(customer_id).references
    assert [(r.name, r.subject, r.version) for r in refs] == [
        ("shop.Address", "address-value", 1)]
    with pytest.raises(SchemaRegistryError) as info:
        fresh.delete_subject("address-value")
    assert info.value.error_code == 42206
    assert address_id != customer_id


def test_json_schemas_register_and_come_back_with_their_type(service, client):
    schema = Schema(json.dumps({"type": "object", "properties": {"id": {"type": "integer"}},
                                "additionalProperties": False}), "JSON")
    schema_id = client.register_schema("events-value", schema)
    fetched = _fresh(service).get_schema(schema_id)
    assert fetched.schema_type == "JSON"
    assert json.loads(fetched.schema_str)["properties"] == {"id": {"type": "integer"}}
