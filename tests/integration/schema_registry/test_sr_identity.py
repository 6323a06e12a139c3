"""Schema identity with ``normalize`` and JSON key order, through Confluent's own client.

Each test starts a real ``RegistryService`` (waitress on a free port) over an ``embedded:``
log and talks to it through ``SchemaRegistryClient``; a fresh client is used for every
check so that no answer comes from the client's cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

# Written with a namespace and non-standard key order: its default canonical form and its
# normalized form (full names, fixed key order) are different texts.
AVRO = Schema(json.dumps({
    "fields": [{"type": "string", "name": "name"},
               {"name": "tags", "type": {"type": "array", "items": "string"}}],
    "namespace": "com.example", "name": "User", "type": "record"}), "AVRO")
AVRO_REORDERED = Schema(json.dumps({
    "type": "record", "name": "com.example.User",
    "fields": [{"name": "name", "type": "string"},
               {"name": "tags", "type": {"items": "string", "type": "array"}}]}), "AVRO")
JSON_A = Schema(json.dumps({"type": "object", "title": "Order",
                            "properties": {"id": {"type": "integer"},
                                           "note": {"type": "string", "maxLength": 9}}}),
                "JSON")
JSON_B = Schema(json.dumps({"properties": {"note": {"maxLength": 9, "type": "string"},
                                           "id": {"type": "integer"}},
                            "title": "Order", "type": "object"}), "JSON")
JSON_OTHER = Schema(json.dumps({"type": "object", "title": "Order",
                                "properties": {"id": {"type": "string"}}}), "JSON")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RegistryService]:
    svc = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                          config={"kafkagroup.heartbeat.interval.ms": "500"})
    svc.start(wait_ready=30)
    assert svc.ready
    yield svc
    svc.stop()


def fresh(service: RegistryService) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": service.url})


def test_a_schema_registered_normalized_is_found_by_a_normalized_lookup(service):
    schema_id = fresh(service).register_schema("users-value", AVRO, normalize_schemas=True)
    found = fresh(service).lookup_schema("users-value", AVRO, normalize_schemas=True)
    assert (found.schema_id, found.version) == (schema_id, 1)
    # Without normalize the lookup still finds it: the schemas are equivalent.
    plain = fresh(service).lookup_schema("users-value", AVRO)
    assert (plain.schema_id, plain.version) == (schema_id, 1)
    # The registry stored the normalized form (full name, fixed key order).
    stored = json.loads(fresh(service).get_version("users-value", 1).schema.schema_str)
    assert stored["name"] == "com.example.User"


def test_normalized_registration_of_a_registered_schema_keeps_its_id_and_version(service):
    schema_id = fresh(service).register_schema("users-value", AVRO)
    again = fresh(service).register_schema("users-value", AVRO, normalize_schemas=True)
    other_text = fresh(service).register_schema("users-value", AVRO_REORDERED,
                                                normalize_schemas=True)
    assert again == other_text == schema_id
    assert fresh(service).get_versions("users-value") == [1]
    # Another subject gets the same id for the same normalized text (exact identity).
    assert fresh(service).register_schema("copy-value", AVRO_REORDERED,
                                          normalize_schemas=True) == \
        fresh(service).register_schema("copy2-value", AVRO, normalize_schemas=True)


def test_json_schema_lookup_and_registration_ignore_key_order(service):
    schema_id = fresh(service).register_schema("orders-value", JSON_A)
    found = fresh(service).lookup_schema("orders-value", JSON_B)
    assert (found.schema_id, found.version) == (schema_id, 1)
    assert fresh(service).register_schema("orders-value", JSON_B) == schema_id
    assert fresh(service).get_versions("orders-value") == [1]
    normalized = fresh(service).lookup_schema("orders-value", JSON_B, normalize_schemas=True)
    assert normalized.schema_id == schema_id
    # A schema that differs in content is still a different schema.
    with pytest.raises(SchemaRegistryError) as info:
        fresh(service).lookup_schema("orders-value", JSON_OTHER)
    assert (info.value.http_status_code, info.value.error_code) == (404, 40403)


def test_normalize_in_the_subject_config_applies_to_registration(service):
    # The client's ServerConfig has no ``normalize``; Confluent's REST API has.
    answer = requests.put(f"{service.url}/config/users-value", json={"normalize": True},
                          timeout=30)
    assert answer.status_code == 200 and answer.json() == {"normalize": True}
    schema_id = fresh(service).register_schema("users-value", AVRO)
    stored = json.loads(fresh(service).get_schema(schema_id).schema_str)
    assert stored["name"] == "com.example.User"  # the normalized form was stored
    assert fresh(service).register_schema("users-value", AVRO_REORDERED) == schema_id


def _schema_id(payload: bytes) -> int:
    assert payload[0] == 0  # Confluent's wire format: magic byte, 4-byte id, data
    return int.from_bytes(payload[1:5], "big")


def test_serializers_find_the_registered_schema_through_lookup(service):
    """Serializers that do not auto-register look their schema up (POST /subjects/{s}):
    a reordered JSON schema and a normalized Avro lookup both find the registered id."""
    json_id = fresh(service).register_schema("orders-value", JSON_A)
    lookup_only = {"auto.register.schemas": False}
    serializer = JSONSerializer(JSON_B.schema_str, fresh(service), conf=lookup_only)
    payload = serializer({"id": 7, "note": "hello"},
                         SerializationContext("orders", MessageField.VALUE))
    assert _schema_id(payload) == json_id

    avro_id = fresh(service).register_schema("users-value", AVRO, normalize_schemas=True)
    serializer = AvroSerializer(fresh(service), AVRO_REORDERED.schema_str,
                                conf={**lookup_only, "normalize.schemas": True})
    payload = serializer({"name": "ann", "tags": ["a"]},
                         SerializationContext("users", MessageField.VALUE))
    assert _schema_id(payload) == avro_id


def test_a_plain_registration_reuses_the_id_of_the_normalized_text(service):
    """The plain text matches the stored normalized one through its re-parsed form; the
    id is reused with the text it already has (one id, one text), not a 500."""
    schema_id = fresh(service).register_schema("users-value", AVRO, normalize_schemas=True)
    assert fresh(service).register_schema("other-value", AVRO) == schema_id
    stored = fresh(service).get_version("other-value", 1)
    assert stored.schema_id == schema_id
    assert stored.schema.schema_str == fresh(service).get_schema(schema_id).schema_str
    assert fresh(service).lookup_schema("other-value", AVRO).schema_id == schema_id
