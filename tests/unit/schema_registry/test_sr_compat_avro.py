"""Avro schema resolution vectors: can the reader schema read what the writer schema wrote?

Each vector names the reader, the writer, and the exact incompatibilities expected as
(errorType, location) pairs; an empty list means compatible. Most rules appear in both
directions (reader and writer swapped).
"""

from __future__ import annotations

import json

import pytest

from schema_registry.schemas import parse_schema
from schema_registry.schemas.avro_compat import AvroIncompatibility, check_avro


def rec(fields, name="R", **extra):
    return {"type": "record", "name": name, "fields": fields, **extra}


def fld(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


def enum(symbols, name="E", **extra):
    return {"type": "enum", "name": name, "symbols": symbols, **extra}


def fixed(size, name="F", **extra):
    return {"type": "fixed", "name": name, "size": size, **extra}


def issues(reader, writer):
    parsed_reader = parse_schema("AVRO", json.dumps(reader))
    parsed_writer = parse_schema("AVRO", json.dumps(writer))
    return sorted((i.error_type, i.location) for i in check_avro(parsed_reader.root,
                                                                 parsed_writer.root))


OK: list[tuple[str, str]] = []
TYPE = "TYPE_MISMATCH"
LINKED = rec([fld("value", "int"), fld("next", ["null", "Node"], default=None)], name="Node")

VECTORS = [
    # --- primitives and promotions ---------------------------------------------------------
    pytest.param("int", "int", OK, id="same-primitive"),
    pytest.param("long", "int", OK, id="promote-int-to-long"),
    pytest.param("int", "long", [(TYPE, "/")], id="demote-long-to-int"),
    pytest.param("float", "int", OK, id="promote-int-to-float"),
    pytest.param("float", "long", OK, id="promote-long-to-float"),
    pytest.param("long", "float", [(TYPE, "/")], id="demote-float-to-long"),
    pytest.param("double", "int", OK, id="promote-int-to-double"),
    pytest.param("double", "long", OK, id="promote-long-to-double"),
    pytest.param("double", "float", OK, id="promote-float-to-double"),
    pytest.param("float", "double", [(TYPE, "/")], id="demote-double-to-float"),
    pytest.param("bytes", "string", OK, id="string-to-bytes"),
    pytest.param("string", "bytes", OK, id="bytes-to-string"),
    pytest.param("string", "int", [(TYPE, "/")], id="int-to-string"),
    pytest.param("boolean", "int", [(TYPE, "/")], id="int-to-boolean"),
    pytest.param("null", "string", [(TYPE, "/")], id="string-to-null"),
    pytest.param("int", "boolean", [(TYPE, "/")], id="boolean-to-int"),
    # --- record fields -----------------------------------------------------------------------
    pytest.param(rec([fld("a", "int"), fld("b", "string")]), rec([fld("a", "int")]),
                 [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
                 id="reader-adds-field-without-default"),
    pytest.param(rec([fld("a", "int"), fld("b", "string", default="x")]), rec([fld("a", "int")]),
                 OK, id="reader-adds-field-with-default"),
    pytest.param(rec([fld("a", "int"), fld("b", ["null", "string"], default=None)]),
                 rec([fld("a", "int")]), OK, id="reader-adds-nullable-field-with-null-default"),
    pytest.param(rec([fld("a", "int")]), rec([fld("a", "int"), fld("b", "string")]), OK,
                 id="reader-drops-writer-field"),
    pytest.param(rec([fld("b", "string"), fld("c", "int"), fld("a", "int")]),
                 rec([fld("a", "int")]),
                 [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0"),
                  ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
                 id="two-missing-fields-both-reported"),
    pytest.param(rec([fld("a", "string")]), rec([fld("a", "int")]), [(TYPE, "/fields/0/type")],
                 id="field-type-changed"),
    pytest.param(rec([fld("a", "long")]), rec([fld("a", "int")]), OK, id="field-promoted"),
    pytest.param(rec([fld("a", "int")]), rec([fld("a", "long")]), [(TYPE, "/fields/0/type")],
                 id="field-demoted"),
    pytest.param(rec([fld("b", "int"), fld("a", "int")]), rec([fld("a", "int"), fld("b", "int")]),
                 OK, id="fields-reordered"),
    pytest.param(rec([fld("a", "int", doc="new doc", default=2)]),
                 rec([fld("a", "int", doc="old", default=1)]), OK, id="doc-and-default-changed"),
    pytest.param(rec([fld("a", rec([fld("x", "string")], name="Inner"))]),
                 rec([fld("a", rec([fld("x", "int")], name="Inner"))]),
                 [(TYPE, "/fields/0/type/fields/0/type")], id="nested-record-location"),
    pytest.param({"type": "error", "name": "R", "fields": [fld("a", "long")]},
                 rec([fld("a", "int")]), OK, id="error-reads-record"),
    # --- names, namespaces, aliases --------------------------------------------------------
    pytest.param(rec([fld("a", "int")], name="S"), rec([fld("a", "int")]),
                 [("NAME_MISMATCH", "/name")], id="record-renamed"),
    pytest.param(rec([fld("a", "int")], name="S", aliases=["R"]), rec([fld("a", "int")]), OK,
                 id="record-renamed-with-alias"),
    pytest.param(rec([fld("a", "int")], name="S", namespace="n", aliases=["R"]),
                 rec([fld("a", "int")], namespace="n"), OK,
                 id="alias-qualified-by-reader-namespace"),
    pytest.param(rec([fld("a", "int")], name="S", namespace="n", aliases=["R"]),
                 rec([fld("a", "int")], namespace="m"), [("NAME_MISMATCH", "/name")],
                 id="alias-in-other-namespace-does-not-match"),
    pytest.param(rec([fld("a", "int")], name="S", namespace="n", aliases=["m.R"]),
                 rec([fld("a", "int")], namespace="m"), OK, id="alias-with-writer-full-name"),
    pytest.param(rec([fld("a", "int")]), rec([fld("a", "int")], name="S", aliases=["R"]),
                 [("NAME_MISMATCH", "/name")], id="writer-alias-is-ignored"),
    pytest.param(rec([fld("a", "int")], namespace="new.ns"), rec([fld("a", "int")],
                                                                  namespace="old.ns"),
                 OK, id="namespace-only-change"),
    pytest.param(rec([fld("b", "int", aliases=["a"])]), rec([fld("a", "int")]), OK,
                 id="field-renamed-with-alias"),
    pytest.param(rec([fld("b", "int")]), rec([fld("a", "int")]),
                 [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")],
                 id="field-renamed-without-alias"),
    pytest.param(rec([fld("b", "long", aliases=["a"])]), rec([fld("a", "string")]),
                 [(TYPE, "/fields/0/type")], id="aliased-field-type-checked"),
    pytest.param(rec([fld("a", "int")]), rec([fld("b", "int", aliases=["a"])]),
                 [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")],
                 id="writer-field-alias-is-ignored"),
    # --- enums ---------------------------------------------------------------------------
    pytest.param(enum(["A", "B", "C"]), enum(["A", "B"]), OK, id="reader-enum-adds-symbol"),
    pytest.param(enum(["A", "B"]), enum(["A", "B", "C"]), [("MISSING_ENUM_SYMBOLS", "/symbols")],
                 id="reader-enum-lacks-writer-symbol"),
    pytest.param(enum(["A", "B"], default="A"), enum(["A", "B", "C"]), OK,
                 id="reader-enum-default-covers-missing-symbol"),
    pytest.param(enum(["C", "B", "A"]), enum(["A", "B", "C"]), OK, id="enum-symbols-reordered"),
    pytest.param(enum(["A"], name="G"), enum(["A"]), [("NAME_MISMATCH", "/name")],
                 id="enum-renamed"),
    pytest.param(rec([fld("e", enum(["A"]))]), rec([fld("e", enum(["A", "Z"]))]),
                 [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")], id="enum-in-field"),
    pytest.param(enum(["A"]), "string", [(TYPE, "/")], id="string-to-enum"),
    pytest.param("string", enum(["A"]), [(TYPE, "/")], id="enum-to-string"),
    # --- fixed ---------------------------------------------------------------------------
    pytest.param(fixed(4), fixed(4), OK, id="same-fixed"),
    pytest.param(fixed(8), fixed(4), [("FIXED_SIZE_MISMATCH", "/size")], id="fixed-grows"),
    pytest.param(fixed(4), fixed(8), [("FIXED_SIZE_MISMATCH", "/size")], id="fixed-shrinks"),
    pytest.param(fixed(4, name="G"), fixed(4), [("NAME_MISMATCH", "/name")], id="fixed-renamed"),
    pytest.param(fixed(4, name="G"), fixed(8),
                 [("FIXED_SIZE_MISMATCH", "/size"), ("NAME_MISMATCH", "/name")],
                 id="fixed-renamed-and-resized"),
    pytest.param(fixed(4), "bytes", [(TYPE, "/")], id="bytes-to-fixed"),
    # --- arrays and maps -------------------------------------------------------------------
    pytest.param({"type": "array", "items": "long"}, {"type": "array", "items": "int"}, OK,
                 id="array-items-promoted"),
    pytest.param({"type": "array", "items": "int"}, {"type": "array", "items": "long"},
                 [(TYPE, "/items")], id="array-items-demoted"),
    pytest.param({"type": "map", "values": "double"}, {"type": "map", "values": "float"}, OK,
                 id="map-values-promoted"),
    pytest.param({"type": "map", "values": "string"}, {"type": "map", "values": "boolean"},
                 [(TYPE, "/values")], id="map-values-changed"),
    pytest.param({"type": "array", "items": "int"}, {"type": "map", "values": "int"},
                 [(TYPE, "/")], id="map-to-array"),
    pytest.param({"type": "array", "items": rec([fld("a", "int"), fld("b", "int")])},
                 {"type": "array", "items": rec([fld("a", "int")])},
                 [("READER_FIELD_MISSING_DEFAULT_VALUE", "/items/fields/1")],
                 id="array-of-records-location"),
    # --- unions --------------------------------------------------------------------------
    pytest.param(["null", "string"], "string", OK, id="reader-union-contains-writer"),
    pytest.param("string", ["null", "string"], [(TYPE, "/")], id="writer-union-branch-unreadable"),
    pytest.param("string", ["string"], OK, id="single-branch-writer-union"),
    pytest.param(["string", "null"], ["null", "string"], OK, id="union-reordered"),
    pytest.param(["null", "long"], ["null", "int"], OK, id="union-branch-promoted"),
    pytest.param(["null", "int"], ["null", "long"], [("MISSING_UNION_BRANCH", "/1")],
                 id="union-branch-demoted"),
    pytest.param(["null", "string", "int"], ["null", "string"], OK, id="reader-union-grows"),
    pytest.param(["null", "string"], ["null", "string", "int"], [("MISSING_UNION_BRANCH", "/2")],
                 id="reader-union-lacks-writer-branch"),
    pytest.param(["int", "string"], "boolean", [("MISSING_UNION_BRANCH", "/")],
                 id="reader-union-lacks-writer-type"),
    pytest.param(["null", "double"], "int", OK, id="reader-union-promotes-writer"),
    pytest.param("long", ["int", "long"], OK, id="every-writer-branch-promotes"),
    pytest.param(rec([fld("a", ["null", "string"], default=None)]), rec([fld("a", "string")]), OK,
                 id="field-made-nullable"),
    pytest.param(rec([fld("a", "string")]), rec([fld("a", ["null", "string"], default=None)]),
                 [(TYPE, "/fields/0/type")], id="field-made-required"),
    pytest.param(["null", rec([fld("a", "int")], name="S", aliases=["R"])],
                 rec([fld("a", "int")]), OK, id="union-branch-matched-by-alias"),
    # --- logical types are ignored ---------------------------------------------------------
    pytest.param({"type": "int", "logicalType": "date"}, "int", OK, id="logical-type-added"),
    pytest.param("int", {"type": "int", "logicalType": "date"}, OK, id="logical-type-removed"),
    pytest.param({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
                 {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}, OK,
                 id="decimal-precision-changed"),
    pytest.param({"type": "long", "logicalType": "timestamp-millis"},
                 {"type": "int", "logicalType": "date"}, OK, id="logical-over-promotion"),
    pytest.param({"type": "int", "logicalType": "date"},
                 {"type": "long", "logicalType": "timestamp-millis"}, [(TYPE, "/")],
                 id="logical-over-demotion"),
    # --- recursive types -------------------------------------------------------------------
    pytest.param(LINKED, LINKED, OK, id="recursive-same"),
    pytest.param(rec([fld("value", "long"), fld("next", ["null", "Node"], default=None),
                      fld("tag", "string", default="")], name="Node"),
                 LINKED, OK, id="recursive-evolved-compatibly"),
    pytest.param(rec([fld("value", "int"), fld("next", ["null", "Node"], default=None),
                      fld("tag", "string")], name="Node"),
                 LINKED, [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/2")],
                 id="recursive-missing-default"),
    pytest.param(rec([fld("value", "string"), fld("next", ["null", "Node"], default=None)],
                     name="Node"),
                 LINKED, [(TYPE, "/fields/0/type")], id="recursive-type-changed"),
]


@pytest.mark.parametrize(("reader", "writer", "expected"), VECTORS)
def test_reader_writer_vectors(reader, writer, expected):
    assert issues(reader, writer) == expected


def test_missing_symbols_are_listed_sorted():
    found = check_avro(parse_schema("AVRO", json.dumps(enum(["A"]))).root,
                       parse_schema("AVRO", json.dumps(enum(["A", "D", "C"]))).root)
    assert found == [AvroIncompatibility("MISSING_ENUM_SYMBOLS", "/symbols", "[C, D]")]


def test_messages_carry_confluents_additional_info():
    found = {i.error_type: i.info for i in check_avro(
        parse_schema("AVRO", json.dumps(rec([fld("a", "int"), fld("b", "int")], name="S"))).root,
        parse_schema("AVRO", json.dumps(rec([fld("a", "long")], namespace="n"))).root)}
    assert found == {
        "NAME_MISMATCH": "expected: n.R",
        "TYPE_MISMATCH": "reader type: INT not compatible with writer type: LONG",
        "READER_FIELD_MISSING_DEFAULT_VALUE": "b",
    }


def test_describe_fills_reader_and_writer_roles():
    incompatibility = AvroIncompatibility("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1", "f2")
    assert incompatibility.describe("new", "old") == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'f2' at path "
        "'/fields/1' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'f2'}"
    )
    missing = AvroIncompatibility("MISSING_ENUM_SYMBOLS", "/symbols", "[C]")
    assert "The old schema is missing enum symbols '[C]' at path '/symbols' in the new schema" in (
        missing.describe("old", "new"))


def test_mutually_recursive_types_terminate():
    a = {"type": "record", "name": "A", "fields": [
        {"name": "b", "type": ["null", {"type": "record", "name": "B", "fields": [
            {"name": "a", "type": ["null", "A"]}]}]}]}
    b = json.loads(json.dumps(a))
    b["fields"][0]["type"][1]["fields"].append({"name": "n", "type": "int"})
    assert issues(a, a) == OK
    # union against union: Avro reports the unreadable writer branch, not what is inside it
    assert issues(b, a) == [("MISSING_UNION_BRANCH", "/fields/0/type/1")]
    assert issues(a, b) == OK
