"""JSON schemas and the parse_schema entry point: validation, identity, references."""

from __future__ import annotations

import json

import pytest

from schema_registry.schemas import (
    SCHEMA_TYPES,
    AvroSchema,
    JsonSchema,
    Reference,
    SchemaError,
    UnresolvedReferenceError,
    parse_schema,
)


def js(value, **kwargs) -> JsonSchema:
    text = value if isinstance(value, str) else json.dumps(value)
    parsed = parse_schema("JSON", text, **kwargs)
    assert isinstance(parsed, JsonSchema)
    return parsed


INVALID = [
    pytest.param("{not json", "not valid JSON", id="not-json"),
    pytest.param([1, 2], "a JSON schema is an object or a boolean, got list", id="array"),
    pytest.param(5, "got int", id="number"),
    pytest.param({"type": "foo"}, "Invalid JSON schema at /type", id="unknown-type"),
    pytest.param({"type": "object", "properties": {"a": {"pattern": "("}}},
                 "at /properties/a/pattern: '(' is not a 'regex'", id="bad-pattern"),
    pytest.param({"type": "string", "maxLength": -1}, "at /maxLength", id="negative-maxLength"),
    pytest.param({"required": "a"}, "at /required", id="required-not-a-list"),
    pytest.param({"properties": {"a": {"$ref": "#/definitions/nope"}}},
                 "Unresolvable $ref '#/definitions/nope' at /properties/a", id="dangling-ref"),
    pytest.param({"properties": {"a": {"$ref": "other.json"}}},
                 "must be listed in the schema's references", id="unregistered-ref"),
    pytest.param({"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 3},
                 "3 is not of type 'boolean'", id="draft4-metaschema-applies"),
    pytest.param({"$schema": "https://json-schema.org/draft/2020-12/schema",
                  "dependentRequired": {"a": 1}}, "at /dependentRequired/a",
                 id="draft2020-metaschema-applies"),
]


@pytest.mark.parametrize(("schema", "message"), INVALID)
def test_invalid_json_schema_names_the_problem(schema, message):
    with pytest.raises(SchemaError) as raised:
        js(schema)
    assert message in str(raised.value)


@pytest.mark.parametrize("schema", [
    pytest.param(True, id="true"),
    pytest.param({}, id="empty"),
    pytest.param({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                  "properties": {"a": {"type": "integer", "exclusiveMinimum": 3}}},
                 id="draft7-numeric-exclusive"),
    pytest.param({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number",
                  "minimum": 1, "exclusiveMinimum": True}, id="draft4-boolean-exclusive"),
    pytest.param({"$schema": "https://example.com/custom-dialect", "type": "string"},
                 id="unknown-dialect-falls-back-to-draft7"),
    pytest.param({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
                  "prefixItems": [{"type": "string"}], "items": False}, id="draft2020-tuple"),
    pytest.param({"definitions": {"node": {"type": "object", "properties": {
        "next": {"$ref": "#/definitions/node"}}}}, "$ref": "#/definitions/node"},
        id="recursive-ref"),
    pytest.param({"$id": "http://example.com/root.json", "type": "object", "properties": {
        "a": {"$ref": "#/definitions/a"}}, "definitions": {"a": {"type": "string"}}},
        id="ref-with-base-id"),
])
def test_valid_json_schemas(schema):
    parsed = js(schema)
    assert json.loads(parsed.canonical()) == schema
    parsed.model()  # the compatibility view builds


def test_canonical_keeps_key_order_and_drops_whitespace():
    spaced = '{\n  "type": "object",\n  "properties": {"a": {"type": "string"}}\n}'
    compact = '{"type":"object","properties":{"a":{"type":"string"}}}'
    reordered = '{"properties":{"a":{"type":"string"}},"type":"object"}'
    assert js(spaced).canonical() == compact
    assert js(spaced).fingerprint() == js(compact).fingerprint()
    assert js(reordered).fingerprint() != js(compact).fingerprint()
    assert js(reordered, normalize=True).canonical() == js(compact, normalize=True).canonical()
    assert js(compact, normalize=True).canonical() == (
        '{"properties":{"a":{"type":"string"}},"type":"object"}')


def test_canonical_keeps_non_ascii_text():
    assert js({"title": "Größe"}).canonical() == '{"title":"Größe"}'


def test_name_is_the_title():
    assert js({"title": "Order", "type": "object"}).name == "Order"
    assert js({"type": "object"}).name is None


STORE = {
    ("address", 1): ("JSON", json.dumps({"type": "object", "properties": {
        "street": {"type": "string"}, "geo": {"$ref": "geo.json"}}}),
        [Reference("geo.json", "geo", 1)]),
    ("geo", 1): ("JSON", json.dumps({"type": "object", "properties": {
        "lat": {"type": "number"}}}), []),
    ("avro", 1): ("AVRO", '"string"', []),
}


def resolve(ref):
    if (ref.subject, ref.version) not in STORE:
        raise UnresolvedReferenceError(f"Subject '{ref.subject}' version {ref.version} not found")
    return STORE[(ref.subject, ref.version)]


ORDER = {"$id": "http://example.com/schemas/order.json", "type": "object",
         "properties": {"ship_to": {"$ref": "address.json"}}}
ADDRESS_REF = Reference("address.json", "address", 1)


def test_references_resolve_by_name_and_relative_to_id():
    parsed = js(ORDER, references=[ADDRESS_REF], resolve=resolve)
    validator = parsed.validator()
    assert validator.is_valid({"ship_to": {"street": "Main", "geo": {"lat": 1.5}}})
    errors = [e.message for e in validator.iter_errors({"ship_to": {"geo": {"lat": "north"}}})]
    assert errors == ["'north' is not of type 'number'"]
    no_id = {"type": "object", "properties": {"ship_to": {"$ref": "address.json"}}}
    assert js(no_id, references=[ADDRESS_REF], resolve=resolve).validator().is_valid(
        {"ship_to": {"street": "x"}})


@pytest.mark.parametrize(("references", "error", "message"), [
    pytest.param([Reference("address.json", "missing", 3)], UnresolvedReferenceError,
                 "Subject 'missing' version 3 not found", id="missing-subject"),
    pytest.param([Reference("address.json", "avro", 1)], SchemaError, "is of type AVRO",
                 id="reference-of-another-type"),
    pytest.param([Reference("other.json", "geo", 1)], SchemaError,
                 "Unresolvable $ref 'address.json' at /properties/ship_to; the schema's "
                 "references are ['other.json']", id="ref-name-not-referenced"),
])
def test_json_reference_problems(references, error, message):
    with pytest.raises(error) as raised:
        js(ORDER, references=references, resolve=resolve)
    assert message in str(raised.value)


def test_references_take_part_in_identity():
    plain = js(ORDER, references=[ADDRESS_REF], resolve=resolve)
    STORE[("address", 2)] = STORE[("address", 1)]
    try:
        other = js(ORDER, references=[Reference("address.json", "address", 2)], resolve=resolve)
    finally:
        del STORE[("address", 2)]
    assert plain.canonical() == other.canonical()
    assert plain.fingerprint() != other.fingerprint()


# --- parse_schema and Reference ------------------------------------------------------------------

@pytest.mark.parametrize(("schema_type", "expected"), [
    pytest.param(None, AvroSchema, id="none-means-avro"),
    pytest.param("", AvroSchema, id="empty-means-avro"),
    pytest.param("AVRO", AvroSchema, id="avro"),
    pytest.param("json", JsonSchema, id="lowercase-json"),
])
def test_parse_schema_dispatches_on_type(schema_type, expected):
    text = '"string"' if expected is AvroSchema else '{"type": "string"}'
    assert isinstance(parse_schema(schema_type, text), expected)


def test_unsupported_schema_type():
    with pytest.raises(SchemaError, match="Unsupported schema type 'PROTOBUF'"):
        parse_schema("PROTOBUF", 'syntax = "proto3";')
    assert SCHEMA_TYPES == ("AVRO", "JSON")


def test_schema_must_be_text():
    with pytest.raises(SchemaError, match="must be a string"):
        parse_schema("AVRO", {"type": "string"})  # type: ignore[arg-type]


def test_same_text_different_type_is_a_different_schema():
    text = '{"type": "string"}'
    assert parse_schema("AVRO", text).fingerprint() != parse_schema("JSON", text).fingerprint()


def test_reference_from_json():
    ref = Reference.from_json({"name": "a.B", "subject": "b-value", "version": 2})
    assert ref == Reference("a.B", "b-value", 2)
    assert ref.to_json() == {"name": "a.B", "subject": "b-value", "version": 2}
    for bad in ({"subject": "s", "version": 1}, {"name": "n", "version": 1},
                {"name": "n", "subject": "s", "version": "1"},
                {"name": "n", "subject": "s", "version": True}, ["n", "s", 1]):
        with pytest.raises(SchemaError):
            Reference.from_json(bad)
