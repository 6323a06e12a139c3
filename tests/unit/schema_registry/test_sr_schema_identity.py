"""Exact identity (``fingerprint``) and equivalence (``equivalence``) of parsed schemas."""

from __future__ import annotations

import json

from schema_registry.schemas import Reference, parse_schema

AVRO = {"type": "record", "name": "User", "namespace": "ns", "fields": [
    {"name": "a", "type": "string", "doc": "the a", "x-prop": {"k": 1, "j": 2}}]}
AVRO_REWRITTEN = {"fields": [{"x-prop": {"j": 2, "k": 1}, "doc": "the a", "type": "string",
                             "name": "a"}], "name": "ns.User", "type": "record"}
JSON_A = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
JSON_B = {"properties": {"b": {"type": "integer"}, "a": {"type": "string"}}, "type": "object"}


def avro(value, **kw):
    return parse_schema("AVRO", json.dumps(value), **kw)


def test_avro_forms_of_one_schema_are_equivalent_but_not_identical():
    plain, normalized = avro(AVRO), avro(AVRO, normalize=True)
    assert plain.fingerprint() != normalized.fingerprint()
    assert plain.equivalence() == normalized.equivalence() == avro(AVRO_REWRITTEN).equivalence()


def test_avro_equivalence_still_sees_docs_field_order_and_types():
    changed_doc = json.loads(json.dumps(AVRO))
    changed_doc["fields"][0]["doc"] = "another"
    changed_type = json.loads(json.dumps(AVRO))
    changed_type["fields"][0]["type"] = "bytes"
    two = json.loads(json.dumps(AVRO))
    two["fields"].append({"name": "b", "type": "int"})
    swapped = json.loads(json.dumps(two))
    swapped["fields"].reverse()
    base = avro(AVRO).equivalence()
    assert len({base, avro(changed_doc).equivalence(), avro(changed_type).equivalence()}) == 3
    assert avro(two).equivalence() != avro(swapped).equivalence()


def test_json_key_order_changes_identity_but_not_equivalence():
    a, b = parse_schema("JSON", json.dumps(JSON_A)), parse_schema("JSON", json.dumps(JSON_B))
    assert a.fingerprint() != b.fingerprint()  # Confluent stores the text as written
    assert a.equivalence() == b.equivalence()
    assert parse_schema("JSON", json.dumps(JSON_A), normalize=True).fingerprint() == \
        parse_schema("JSON", json.dumps(JSON_B), normalize=True).fingerprint()
    other = parse_schema("JSON", json.dumps({**JSON_A, "required": ["a"]}))
    assert other.equivalence() != a.equivalence()


def test_reference_order_does_not_change_equivalence():
    refs = {"Ref1": '{"type":"record","name":"Ref1","fields":[]}',
            "Ref2": '{"type":"record","name":"Ref2","fields":[]}'}

    def resolve(ref):
        return "AVRO", refs[ref.name], ()

    text = json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "x", "type": "Ref1"}, {"name": "y", "type": "Ref2"}]})
    r1, r2 = Reference("Ref1", "s1", 1), Reference("Ref2", "s2", 1)
    forward = parse_schema("AVRO", text, [r1, r2], resolve)
    backward = parse_schema("AVRO", text, [r2, r1], resolve)
    assert forward.fingerprint() != backward.fingerprint()
    assert forward.equivalence() == backward.equivalence()
