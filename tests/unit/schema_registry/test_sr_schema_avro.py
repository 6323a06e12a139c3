"""Avro schemas: validation messages, the identity (canonical) rule, and references."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from schema_registry.schemas import (
    AvroSchema,
    Reference,
    SchemaError,
    UnresolvedReferenceError,
    parse_schema,
)


def avro(value, **kwargs) -> AvroSchema:
    text = value if isinstance(value, str) else json.dumps(value)
    parsed = parse_schema("AVRO", text, **kwargs)
    assert isinstance(parsed, AvroSchema)
    return parsed


def rec(fields, name="R", **extra):
    return {"type": "record", "name": name, "fields": fields, **extra}


# --- invalid schemas ---------------------------------------------------------------------------

INVALID = [
    pytest.param("not json", "not valid JSON", id="not-json"),
    pytest.param({"type": "foo"}, "Unknown type 'foo'", id="unknown-type"),
    pytest.param(rec([{"name": "a", "type": "Missing"}]), "Unknown type 'Missing' at "
                 "/fields/0/type", id="unknown-field-type"),
    pytest.param({"type": "record", "name": "R"}, "has no 'fields'", id="missing-fields"),
    pytest.param({"type": "record", "fields": []}, "has no 'name'", id="missing-name"),
    pytest.param(rec([{"name": "x", "type": "int"}, {"name": "x", "type": "long"}]),
                 "Duplicate field 'x' in record 'R'", id="duplicate-field"),
    pytest.param(rec([{"name": "x"}]), "Field 'x' of 'R' has no 'type'", id="field-without-type"),
    pytest.param(rec([{"name": "x-y", "type": "int"}]), "invalid name", id="bad-field-name"),
    pytest.param(rec([], name="1R"), "Invalid name '1R'", id="bad-record-name"),
    pytest.param(rec([{"name": "x", "type": "int", "default": "a"}]),
                 "Invalid default for field 'x' in record 'R' at /fields/0/default: \"a\" is "
                 "not a valid int", id="default-wrong-type"),
    pytest.param(rec([{"name": "x", "type": "int", "default": 2**31}]),
                 "Invalid default for field 'x'", id="default-int-overflow"),
    pytest.param(rec([{"name": "x", "type": "int", "default": 1.5}]),
                 "Invalid default for field 'x'", id="default-float-for-int"),
    pytest.param(rec([{"name": "x", "type": "long", "default": True}]),
                 "Invalid default for field 'x'", id="default-bool-for-long"),
    pytest.param(rec([{"name": "x", "type": "string", "default": None}]),
                 "null is not a valid string", id="default-null-for-string"),
    pytest.param(rec([{"name": "x", "type": ["int", "string"], "default": None}]),
                 "null is not a valid [int, string]", id="default-matches-no-union-branch"),
    pytest.param(rec([{"name": "x", "type": {"type": "array", "items": "int"},
                       "default": [1, "a"]}]), "Invalid default for field 'x'",
                 id="default-bad-array-item"),
    pytest.param(rec([{"name": "x", "type": rec([{"name": "y", "type": "int"}], name="In"),
                       "default": {}}]), "Invalid default for field 'x'",
                 id="default-record-missing-field"),
    pytest.param(rec([{"name": "x", "type": {"type": "enum", "name": "E", "symbols": ["A"]},
                       "default": "B"}]), "Invalid default for field 'x'",
                 id="default-not-a-symbol"),
    pytest.param(rec([{"name": "x", "type": "int", "order": "up"}]), "invalid order",
                 id="bad-field-order"),
    pytest.param({"type": "enum", "name": "E", "symbols": ["A", "B", "A"]},
                 "Enum 'E' has duplicate symbols: A", id="duplicate-symbol"),
    pytest.param({"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "C"},
                 "Default \"C\" of enum 'E' is not one of its symbols", id="bad-enum-default"),
    pytest.param({"type": "enum", "name": "E", "symbols": ["a-b"]}, "invalid symbol",
                 id="bad-enum-symbol"),
    pytest.param({"type": "enum", "name": "E"}, "has no 'symbols'", id="missing-symbols"),
    pytest.param({"type": "fixed", "name": "F"}, "non-negative integer 'size'",
                 id="missing-fixed-size"),
    pytest.param({"type": "fixed", "name": "F", "size": -1}, "non-negative integer 'size'",
                 id="negative-fixed-size"),
    pytest.param({"type": "array"}, "Array schema at / has no 'items'", id="array-no-items"),
    pytest.param({"type": "map"}, "Map schema at / has no 'values'", id="map-no-values"),
    pytest.param(["int", "int"], "Duplicate type 'int' in union", id="duplicate-union-branch"),
    pytest.param(["null", ["int"]], "nested union", id="nested-union"),
    pytest.param(rec([{"name": "a", "type": rec([], name="R")}]),
                 "Named type 'R' is defined twice", id="redefined-name"),
    pytest.param({"type": "fixed", "name": "int", "size": 1}, "named after the primitive",
                 id="named-after-primitive"),
    pytest.param({"no": "type"}, "has no 'type'", id="object-without-type"),
    pytest.param({"type": {"type": "int"}}, "must be a type name", id="nested-type-object"),
    pytest.param(5, "expected a type name, an object or an array", id="number-schema"),
    pytest.param({"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "g", "type": {"type": "fixed", "name": "G", "namespace": "", "size": 2}},
        {"name": "g2", "type": "G"}]}, "Unknown type 'G' at /fields/1/type",
        id="no-null-namespace-fallback"),
    pytest.param({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 4},
                 "fastavro rejects it", id="decimal-scale-above-precision"),
    pytest.param({"type": "record", "name": "R", "fields": [], "aliases": "X"},
                 "'aliases' at / must be an array", id="aliases-not-a-list"),
]


@pytest.mark.parametrize(("schema", "message"), INVALID)
def test_invalid_schema_names_the_problem(schema, message):
    with pytest.raises(SchemaError) as raised:
        avro(schema)
    assert message in str(raised.value)


VALID = [
    pytest.param('"string"', id="bare-primitive"),
    pytest.param(["null", "string"], id="union"),
    pytest.param(rec([{"name": "a", "type": ["null", "string"], "default": "x"}]),
                 id="union-default-on-second-branch"),
    pytest.param(rec([{"name": "a", "type": "double", "default": "NaN"}]), id="nan-default"),
    pytest.param(rec([{"name": "a", "type": "float", "default": 1}]), id="int-default-for-float"),
    pytest.param(rec([{"name": "a", "type": {"type": "map", "values": "long"},
                       "default": {"k": 1}}]), id="map-default"),
    pytest.param(rec([{"name": "next", "type": ["null", "R"], "default": None}]), id="recursive"),
    pytest.param({"type": "error", "name": "Oops", "fields": []}, id="error-type"),
    pytest.param({"type": "int", "logicalType": "date"}, id="logical-type"),
    pytest.param({"type": "string", "logicalType": "made-up"}, id="unknown-logical-type"),
    pytest.param({"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "B"},
                 id="enum-default"),
    pytest.param({"type": "record", "name": "a.b.R", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
        {"name": "e2", "type": "a.b.E"}, {"name": "e3", "type": "E"}]},
        id="names-resolved-in-namespace"),
    pytest.param({"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "g", "type": {"type": "record", "name": "G", "namespace": "", "fields": [
            {"name": "h", "type": {"type": "fixed", "name": "H", "size": 2}},
            {"name": "h2", "type": "H"}]}}]}, id="null-namespace-inside-namespace"),
    pytest.param(rec([{"name": "a", "type": "int", "connect.name": "x"}], **{
        "connect.version": 2}), id="custom-properties"),
]


@pytest.mark.parametrize("schema", VALID)
def test_valid_schema_is_accepted_and_canonical_reparses(schema):
    parsed = avro(schema)
    assert avro(parsed.canonical()).canonical() == parsed.canonical()
    normalized = avro(schema, normalize=True).canonical()
    assert avro(normalized, normalize=True).canonical() == normalized
    assert avro(normalized).canonical() == parsed.canonical()  # no order-sensitive props here
    fastavro.parse_schema(json.loads(parsed.canonical()))


# --- identity ----------------------------------------------------------------------------------

BASE = rec([{"name": "a", "type": "int", "doc": "first"},
            {"name": "b", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}}],
           namespace="com.acme", doc="A record")


def variant(**changes):
    value = json.loads(json.dumps(BASE))
    for path, new in changes.items():
        target = value
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        target[keys[-1]] = new
    return value


SAME_SCHEMA = [
    pytest.param(json.dumps(BASE, indent=4), id="whitespace"),
    pytest.param(json.dumps(dict(reversed(list(BASE.items())))), id="top-level-key-order"),
    pytest.param(json.dumps({**BASE, "fields": [dict(reversed(list(fl.items())))
                                                for fl in BASE["fields"]]}),
                 id="field-key-order"),
    pytest.param(json.dumps({**BASE, "name": "com.acme.R", "namespace": "ignored"}),
                 id="full-name-instead-of-namespace"),
    pytest.param(json.dumps(variant(fields__1__type={"type": "enum", "name": "com.acme.E",
                                                     "symbols": ["X", "Y"]})),
                 id="nested-full-name"),
    pytest.param(json.dumps(variant(fields__0__type={"type": "int"})),
                 id="primitive-object-form"),
    pytest.param(json.dumps(variant(fields__0__order="ascending")), id="default-field-order"),
]


@pytest.mark.parametrize("text", SAME_SCHEMA)
def test_same_schema_same_identity(text):
    assert avro(text).canonical() == avro(BASE).canonical()
    assert avro(text).fingerprint() == avro(BASE).fingerprint()


DIFFERENT_SCHEMA = [
    pytest.param(variant(fields=list(reversed(BASE["fields"]))), id="field-order"),
    pytest.param(variant(fields__1__type={"type": "enum", "name": "E", "symbols": ["Y", "X"]}),
                 id="symbol-order"),
    pytest.param(variant(doc="Another doc"), id="record-doc"),
    pytest.param(variant(fields__0__doc="other"), id="field-doc"),
    pytest.param(variant(fields__0__default=0), id="field-default-added"),
    pytest.param(variant(fields__0__aliases=["z"]), id="field-alias"),
    pytest.param(variant(aliases=["Old"]), id="record-alias"),
    pytest.param({**BASE, "connect.name": "com.acme.R"}, id="custom-property"),
    pytest.param(variant(namespace="com.other"), id="namespace"),
    pytest.param(variant(fields__0__type={"type": "int", "logicalType": "date"}),
                 id="logical-type"),
    pytest.param(variant(fields__0__order="descending"), id="field-order-attribute"),
]


@pytest.mark.parametrize("value", DIFFERENT_SCHEMA)
def test_meaningful_change_changes_identity(value):
    assert avro(value).fingerprint() != avro(BASE).fingerprint()


def test_canonical_is_avro_to_string_form():
    schema = {"fields": [{"type": "int", "name": "a", "default": 1, "order": "descending"},
                         {"name": "n", "type": {"type": "record", "name": "N", "namespace": "",
                                                "fields": [{"name": "back",
                                                            "type": ["null", "com.x.R"]}]}},
                         {"name": "f", "type": {"type": "fixed", "name": "o.F", "size": 2}}],
              "aliases": ["Old"], "name": "R", "type": "record", "namespace": "com.x",
              "connect.name": "R"}
    assert avro(schema).canonical() == (
        '{"type":"record","name":"R","namespace":"com.x","fields":['
        '{"name":"a","type":"int","default":1,"order":"descending"},'
        '{"name":"n","type":{"type":"record","name":"N","namespace":"","fields":['
        '{"name":"back","type":["null","com.x.R"]}]}},'
        '{"name":"f","type":{"type":"fixed","name":"F","namespace":"o","size":2}}],'
        '"connect.name":"R","aliases":["Old"]}'
    )


def test_normalize_sorts_properties_and_qualifies_names():
    one = {"type": "record", "name": "R", "namespace": "n", "b.prop": 1, "a.prop": 2,
           "aliases": ["Z", "A"],
           "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
                      {"name": "e2", "type": "E"}]}
    two = {**one, "aliases": ["A", "Z"]}
    two = {"a.prop": 2, **{k: v for k, v in two.items() if k != "a.prop"}}
    assert avro(one).canonical() != avro(two).canonical()
    normalized = avro(one, normalize=True).canonical()
    assert normalized == avro(two, normalize=True).canonical()
    assert normalized == (
        '{"name":"n.R","type":"record","fields":[{"name":"e","type":{"name":"n.E",'
        '"type":"enum","symbols":["X"]}},{"name":"e2","type":"n.E"}],'
        '"aliases":["n.A","n.Z"],"a.prop":2,"b.prop":1}'
    )
    assert avro(normalized).canonical() == avro(normalized).canonical()


def test_name_and_record_names():
    parsed = avro(BASE)
    assert parsed.name == "com.acme.R"
    assert parsed.record_names() == ("com.acme.R", "com.acme.E")
    assert avro('"string"').name is None
    assert parsed.schema_type == "AVRO"
    assert parsed.raw == json.dumps(BASE)


# --- references --------------------------------------------------------------------------------

ADDRESS = {"type": "record", "name": "Address", "namespace": "com.acme",
           "fields": [{"name": "street", "type": "string"}]}
CUSTOMER = {"type": "record", "name": "Customer", "namespace": "com.acme",
            "fields": [{"name": "address", "type": "com.acme.Address"}]}
STORE = {
    ("address", 1): ("AVRO", json.dumps(ADDRESS), []),
    ("customer", 1): ("AVRO", json.dumps(CUSTOMER),
                      [Reference("com.acme.Address", "address", 1)]),
    ("json", 1): ("JSON", '{"type": "string"}', []),
    ("loop-a", 1): ("AVRO", '"int"', [Reference("b", "loop-b", 1)]),
    ("loop-b", 1): ("AVRO", '"int"', [Reference("a", "loop-a", 1)]),
    ("broken", 1): ("AVRO", '{"type": "record", "name": "B"}', []),
}
CUSTOMER_REF = Reference("com.acme.Customer", "customer", 1)


def resolve(ref: Reference):
    if (ref.subject, ref.version) not in STORE:
        raise UnresolvedReferenceError(f"Subject '{ref.subject}' version {ref.version} not found")
    return STORE[(ref.subject, ref.version)]


ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "customer", "type": "Customer"},
                    {"name": "ship_to", "type": "com.acme.Address"}]}


def test_referenced_types_are_known_transitively():
    parsed = avro(ORDER, references=[CUSTOMER_REF], resolve=resolve)
    assert parsed.record_names() == ("com.acme.Order",)
    assert parsed.references == (CUSTOMER_REF,)
    assert '"type":"Customer"' in parsed.canonical()
    assert '"type":"Address"' in parsed.canonical()  # referenced types print as names


def test_referenced_schema_serializes_with_fastavro():
    parsed = avro(ORDER, references=[CUSTOMER_REF], resolve=resolve)
    record = {"customer": {"address": {"street": "Main"}}, "ship_to": {"street": "Dock"}}
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed.fastavro_schema, record)
    buffer.seek(0)
    assert fastavro.schemaless_reader(buffer, parsed.fastavro_schema) == record


def test_references_change_the_fingerprint():
    with_ref = avro(ORDER, references=[CUSTOMER_REF], resolve=resolve)
    both = avro(ORDER, references=[CUSTOMER_REF, Reference("com.acme.Address", "address", 1)],
                resolve=resolve)
    assert with_ref.canonical() == both.canonical()
    assert with_ref.fingerprint() != both.fingerprint()


def test_normalize_sorts_and_deduplicates_references():
    address = Reference("com.acme.Address", "address", 1)
    parsed = avro(ORDER, references=[CUSTOMER_REF, address, CUSTOMER_REF], resolve=resolve,
                  normalize=True)
    assert parsed.references == (address, CUSTOMER_REF)


@pytest.mark.parametrize(("references", "error", "message"), [
    pytest.param([], SchemaError, "Unknown type 'Customer'", id="type-without-reference"),
    pytest.param([Reference("x", "missing", 1)], UnresolvedReferenceError,
                 "Subject 'missing' version 1 not found", id="missing-subject"),
    pytest.param([Reference("x", "json", 1)], SchemaError, "is of type JSON",
                 id="reference-of-another-type"),
    pytest.param([Reference("a", "loop-a", 1)], SchemaError, "Circular schema references",
                 id="circular-references"),
    pytest.param([Reference("B", "broken", 1)], SchemaError,
                 "Invalid referenced schema 'B' (subject 'broken' version 1)",
                 id="invalid-referenced-schema"),
])
def test_reference_problems(references, error, message):
    with pytest.raises(error) as raised:
        avro(ORDER, references=references, resolve=resolve)
    assert message in str(raised.value)


def test_references_without_a_resolver():
    with pytest.raises(UnresolvedReferenceError, match="no way to resolve"):
        avro(ORDER, references=[CUSTOMER_REF])


def test_redefining_a_referenced_type_is_an_error():
    schema = rec([{"name": "a", "type": ADDRESS}], name="Holder")
    with pytest.raises(SchemaError, match=r"'com\.acme\.Address' is defined twice"):
        avro(schema, references=[Reference("com.acme.Address", "address", 1)], resolve=resolve)
