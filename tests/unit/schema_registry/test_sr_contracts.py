"""Data contracts (``metadata``, ``ruleSet``): normal form, validation, merging, identity."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from schema_registry import contracts as c
from schema_registry.errors import InvalidRuleSetError, InvalidSchemaError
from schema_registry.records import SchemaRecord, decode_record, encode_record
from schema_registry.schemas import Reference


def cel(name: str, mode: str = "WRITE", **extra: object) -> dict[str, object]:
    return {"name": name, "kind": "CONDITION", "mode": mode, "type": "CEL", "expr": "true",
            **extra}


def test_metadata_normal_form_sorts_and_drops_empty_fields():
    raw = {"tags": {"b": ["y", "x", "x"], "a": ["z"]}, "properties": {"k2": "v", "k1": "v"},
           "sensitive": ["s2", "s1"], "unknown": 1}
    assert c.parse_metadata(raw) == {"tags": {"a": ["z"], "b": ["x", "y"]},
                                     "properties": {"k1": "v", "k2": "v"},
                                     "sensitive": ["s1", "s2"]}
    assert c.parse_metadata({"properties": {}}) == {}
    assert c.parse_metadata(None) is None
    with pytest.raises(InvalidSchemaError, match=r"properties\.k"):
        c.parse_metadata({"properties": {"k": 1}})


def test_rules_get_confluent_defaults_and_field_order():
    rule_set = c.parse_rule_set({"domainRules": [{"name": "r", "type": "CEL", "doc": "",
                                                  "params": {"b": "1", "a": "2"}}],
                                 "migrationRules": []})
    assert rule_set == {"domainRules": [{"name": "r", "kind": "TRANSFORM", "mode": "WRITEREAD",
                                         "type": "CEL", "params": {"a": "2", "b": "1"},
                                         "disabled": False}]}
    assert list(rule_set["domainRules"][0]) == ["name", "kind", "mode", "type", "params",
                                                "disabled"]


@pytest.mark.parametrize("rule_set, message", [
    ({"domainRules": [cel("a"), cel("a")]}, "duplicate name 'a'"),
    ({"domainRules": [{"type": "CEL"}]}, "Missing rule name"),
    ({"domainRules": [{"name": "a"}]}, "Missing rule type"),
    ({"domainRules": [cel("1a")]}, "Illegal initial character"),
    ({"domainRules": [cel("a b")]}, "Illegal character"),
    ({"domainRules": [cel("a", "UPGRADE")]}, "Domain rules can only be"),
    ({"migrationRules": [cel("a", "WRITE")]}, "Migration rules can only be"),
    ({"encodingRules": [cel("a", "UPDOWN")]}, "Encoding rules can only be"),
    ({"domainRules": [cel("a", "WRITE", onFailure="ERROR,NONE")]}, "Multiple actions"),
    ({"domainRules": [cel("a", kind="CHECK")]}, "Invalid kind"),
    ({"enableAt": "LATER"}, "enableAt"),
])
def test_invalid_rule_sets_are_refused_as_confluent_refuses_them(rule_set, message):
    with pytest.raises(InvalidRuleSetError, match=message) as info:
        c.parse_rule_set(rule_set)
    assert (info.value.status, info.value.error_code) == (422, 42210)


def test_merging_follows_confluent():
    old = c.parse_metadata({"properties": {"a": "1", "b": "1"}, "sensitive": ["x"]})
    new = c.parse_metadata({"properties": {"b": "2"}, "sensitive": ["y"]})
    assert c.merge_metadata(old, new) == {"properties": {"a": "1", "b": "2"},
                                          "sensitive": ["x", "y"]}
    assert c.merge_metadata(None, new) is new and c.merge_metadata(old, None) is old
    old_rules = c.parse_rule_set({"domainRules": [cel("a"), cel("b")], "enableAt": "ALL"})
    new_rules = c.parse_rule_set({"domainRules": [cel("b", expr="false"), cel("c")]})
    merged = c.merge_rule_sets(old_rules, new_rules)
    assert [(r["name"], r["expr"]) for r in merged["domainRules"]] == [
        ("a", "true"), ("b", "false"), ("c", "true")]
    assert merged["enableAt"] == "ALL"


def test_registration_contracts_take_request_then_previous_then_config():
    previous = (c.parse_metadata({"properties": {"owner": "old"}}),
                c.parse_rule_set({"domainRules": [cel("prev")]}))
    config = {"defaultMetadata": {"properties": {"owner": "default", "team": "t"}},
              "overrideRuleSet": {"domainRules": [cel("forced")]}}
    md, rules = c.registration_contracts(config, None, None, previous, 3)
    assert md == {"properties": {"owner": "old", "team": "t"}}
    assert [r["name"] for r in rules["domainRules"]] == ["prev", "forced"]
    mine = c.parse_metadata({"properties": {"owner": "me"}})
    md, _ = c.registration_contracts({}, mine, None, previous, 3, requested_version=3)
    assert md == {"properties": {"confluent:version": "3", "owner": "me"}}


def test_same_ignoring_version():
    with_version = c.with_confluent_version(c.parse_metadata({"properties": {"a": "1"}}), 2)
    plain = c.parse_metadata({"properties": {"a": "1"}})
    assert c.same_ignoring_version(plain, None, with_version, None, 2)
    assert c.same_ignoring_version(with_version, None, plain, None, 2)
    assert not c.same_ignoring_version(with_version, None, plain, None, 3)
    assert not c.same_ignoring_version(plain, {"domainRules": []}, with_version, None, 2)


def test_guid_is_confluents_md5_of_the_schema_and_its_contracts():
    text = '{"type":"string"}'
    assert c.schema_guid(text, (), None, None) == \
        str(uuid.UUID(bytes=hashlib.md5(text.encode()).digest()))
    ref = Reference("n", "s", 1)
    expected = hashlib.md5(text.encode() + b"n" + b"s" + b"\x00\x00\x00\x01" + b"\x01"
                           + b"k" + b"v").digest()
    assert c.schema_guid(text, (ref,), {"properties": {"k": "v"}}, None) == \
        str(uuid.UUID(bytes=expected))
    assert c.schema_guid(text, (), {}, None) != c.schema_guid(text, (), None, None)
    rules = c.parse_rule_set({"domainRules": [cel("a")]})
    assert c.schema_guid(text, (), None, rules) != c.schema_guid(text, (), None, None)


def test_identity_includes_contracts_only_when_present():
    assert c.contract_fingerprint("fp", None, None) == "fp"
    assert c.contract_fingerprint("fp", {}, None) != "fp"
    assert c.contract_fingerprint("fp", None, {"domainRules": []}) != \
        c.contract_fingerprint("fp", {}, None)


def test_schema_records_carry_contracts_under_confluents_names():
    record = SchemaRecord("s", 1, 7, "AVRO", '"int"', (), False,
                          {"properties": {"a": "b"}}, {"domainRules": [
                              c.parse_rule_set({"domainRules": [cel("r")]})["domainRules"][0]]})
    key, value = encode_record(record)
    assert value is not None
    assert value.index(b'"metadata"') < value.index(b'"ruleSet"') < value.index(b'"schema"')
    assert decode_record(key, value) == record


def test_config_fields_are_validated():
    assert c.normalize_config_fields({"compatibilityGroup": "major", "x": 1}) == \
        {"compatibilityGroup": "major"}
    with pytest.raises(InvalidRuleSetError):
        c.normalize_config_fields({"defaultRuleSet": {"domainRules": [{"name": "a"}]}})


def test_a_stored_rule_set_this_registry_would_refuse_is_kept_not_dropped():
    key = b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
    odd = {"domainRules": [{"name": "dup", "type": "CEL"}, {"name": "dup", "type": "CEL"}]}
    value = json.dumps({"subject": "s", "version": 1, "id": 1, "schema": '"int"',
                        "ruleSet": odd}).encode()
    record = decode_record(key, value)
    assert record is not None and record.rule_set == odd


def test_schema_tag_requests_are_refused_not_ignored():
    c.refuse_schema_tags({"schemaTagsToAdd": [], "propagateSchemaTags": False})
    with pytest.raises(InvalidSchemaError, match="schemaTagsToAdd, propagateSchemaTags"):
        c.refuse_schema_tags({"schemaTagsToAdd": [{"schemaEntity": {}, "tags": ["PII"]}],
                              "propagateSchemaTags": True})
