"""Schema identity with data contracts: equivalence (normalize, JSON key order) together
with metadata and rule sets, through Confluent's own client.

A schema is the same schema exactly when it is the same or an equivalent text *and* has
the same metadata and rule set. Each test starts a real ``RegistryService`` (waitress on a
free port) over an ``embedded:`` log; a fresh client is used for every check so that no
answer comes from the client's cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

V1 = {"Content-Type": "application/vnd.schemaregistry.v1+json"}

# Written with a namespace and non-standard key order: its default canonical form and its
# normalized form are different texts.
AVRO = json.dumps({
    "fields": [{"type": "string", "name": "name"}],
    "namespace": "com.example", "name": "User", "type": "record"})
AVRO_REORDERED = json.dumps({
    "type": "record", "name": "com.example.User",
    "fields": [{"name": "name", "type": "string"}]})
JSON_A = json.dumps({"type": "object", "title": "Order",
                     "properties": {"id": {"type": "integer"},
                                    "note": {"type": "string", "maxLength": 9}}})
JSON_B = json.dumps({"properties": {"note": {"maxLength": 9, "type": "string"},
                                    "id": {"type": "integer"}},
                     "title": "Order", "type": "object"})


def rule_set(expr: str) -> RuleSet:
    check = Rule("checkName", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None,
                 RuleParams({}), expr, None, None, False)
    return RuleSet(None, [check])


RULES_1 = rule_set("message.name != ''")
RULES_2 = rule_set("size(message.name) < 20")
OWNER = Metadata(MetadataTags({}), MetadataProperties({"owner": "team-a"}), set())


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


def avro(text: str, rules: RuleSet | None = None,
         metadata: Metadata | None = None) -> Schema:
    return Schema(text, "AVRO", [], metadata, rules)


def test_a_normalized_lookup_finds_a_normalized_registration_with_its_contracts(service):
    schema_id = fresh(service).register_schema("users-value", avro(AVRO, RULES_1, OWNER),
                                               normalize_schemas=True)
    found = fresh(service).lookup_schema("users-value", avro(AVRO_REORDERED, RULES_1, OWNER),
                                         normalize_schemas=True)
    assert (found.schema_id, found.version) == (schema_id, 1)
    assert found.schema.rule_set.domain_rules[0].expr == "message.name != ''"
    assert found.schema.metadata.properties.properties == {"owner": "team-a"}
    # Without normalize the equivalent text is still found, with the same contracts.
    plain = fresh(service).lookup_schema("users-value", avro(AVRO, RULES_1, OWNER))
    assert (plain.schema_id, plain.version) == (schema_id, 1)
    # The same schema with another rule set is not that schema.
    with pytest.raises(SchemaRegistryError) as info:
        fresh(service).lookup_schema("users-value", avro(AVRO_REORDERED, RULES_2, OWNER),
                                     normalize_schemas=True)
    assert (info.value.http_status_code, info.value.error_code) == (404, 40403)


def test_equivalent_json_is_the_same_schema_only_with_the_same_rule_set(service):
    def json_schema(text: str, rules: RuleSet) -> Schema:
        return Schema(text, "JSON", [], None, rules)

    first = fresh(service).register_schema("orders-value", json_schema(JSON_A, RULES_1))
    # Reordered keys, same rules: the same schema, no new version.
    assert fresh(service).register_schema("orders-value",
                                          json_schema(JSON_B, RULES_1)) == first
    assert fresh(service).get_versions("orders-value") == [1]
    # Reordered keys, other rules: another schema with its own id and version.
    second = fresh(service).register_schema("orders-value", json_schema(JSON_B, RULES_2))
    assert second != first
    assert fresh(service).get_versions("orders-value") == [1, 2]
    # Each lookup finds the version with its own rules, whatever the key order.
    by_rules_1 = fresh(service).lookup_schema("orders-value", json_schema(JSON_B, RULES_1))
    by_rules_2 = fresh(service).lookup_schema("orders-value", json_schema(JSON_A, RULES_2))
    assert (by_rules_1.schema_id, by_rules_1.version) == (first, 1)
    assert (by_rules_2.schema_id, by_rules_2.version) == (second, 2)


def test_a_reused_id_keeps_its_text_and_contracts(service):
    """A plain registration elsewhere matches the normalized text (with the same rules)
    and reuses its id with its stored text; without the rules it is another schema."""
    schema_id = fresh(service).register_schema("users-value", avro(AVRO, RULES_1),
                                               normalize_schemas=True)
    assert fresh(service).register_schema("other-value", avro(AVRO, RULES_1)) == schema_id
    stored = fresh(service).get_version("other-value", 1)
    assert stored.schema_id == schema_id
    assert stored.schema.schema_str == fresh(service).get_schema(schema_id).schema_str
    assert stored.schema.rule_set.domain_rules[0].name == "checkName"
    assert fresh(service).register_schema("bare-value", avro(AVRO)) != schema_id


def test_the_register_answer_is_the_full_version_also_when_already_registered(service):
    body = {"schema": AVRO, "ruleSet": {"domainRules": [
        {"name": "checkName", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
         "expr": "message.name != ''"}]}}
    first = requests.post(f"{service.url}/subjects/users-value/versions?normalize=true",
                          json=body, headers=V1, timeout=30)
    assert first.status_code == 200, first.text
    answer = first.json()
    assert set(answer) == {"id", "version", "guid", "ruleSet", "schema"}
    assert answer["version"] == 1 and answer["ruleSet"]["domainRules"][0]["disabled"] is False
    normalized_text = answer["schema"]
    # The equivalent plain text again: the existing version, with the text it was stored as.
    again = requests.post(f"{service.url}/subjects/users-value/versions",
                          json={**body, "schema": AVRO_REORDERED}, headers=V1, timeout=30)
    assert again.status_code == 200, again.text
    assert again.json() == answer
    assert again.json()["schema"] == normalized_text
    by_guid = requests.get(f"{service.url}/schemas/guids/{answer['guid']}", timeout=30).json()
    assert by_guid["schema"] == normalized_text and by_guid["ruleSet"] == answer["ruleSet"]


def test_put_config_keeps_contract_fields_drops_unknown_ones_and_null_clears(service):
    url = f"{service.url}/config/users-value"
    set_answer = requests.put(url, headers=V1, timeout=30, json={
        "defaultMetadata": {"properties": {"owner": "team-a"}}, "noSuchField": 1})
    assert set_answer.status_code == 200, set_answer.text
    assert set_answer.json() == {"defaultMetadata": {"properties": {"owner": "team-a"}}}
    config = requests.get(url, timeout=30).json()
    assert config["defaultMetadata"] == {"properties": {"owner": "team-a"}}
    assert "noSuchField" not in config
    # Registrations take the default metadata; a normalized lookup finds them by it.
    schema_id = fresh(service).register_schema("users-value", avro(AVRO),
                                               normalize_schemas=True)
    found = fresh(service).lookup_schema("users-value", avro(AVRO_REORDERED, None, OWNER),
                                         normalize_schemas=True)
    assert found.schema_id == schema_id
    # A body that only clears a contract field is an update, not a missing level.
    cleared = requests.put(url, headers=V1, timeout=30, json={"defaultMetadata": None})
    assert cleared.status_code == 200, cleared.text
    assert "defaultMetadata" not in requests.get(url, timeout=30).json()
