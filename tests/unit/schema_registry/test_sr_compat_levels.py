"""check_compatibility: the seven levels, transitive vs latest-only, and Confluent's messages."""

from __future__ import annotations

import json

import pytest

from schema_registry.schemas import COMPATIBILITY_LEVELS, check_compatibility, parse_schema


def avro(fields, name="R", **extra):
    return parse_schema("AVRO", json.dumps({"type": "record", "name": name, "fields": fields,
                                            **extra}))


def js(schema):
    return parse_schema("JSON", json.dumps(schema))


def f(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


A = [f("a", "int")]
# (old, new) pairs and whether they pass BACKWARD, FORWARD, FULL
CHANGES = {
    "add-field-no-default": (avro(A), avro([*A, f("b", "string")]), (False, True, False)),
    "add-field-with-default": (avro(A), avro([*A, f("b", "string", default="")]),
                               (True, True, True)),
    "remove-field-no-default": (avro([*A, f("b", "string")]), avro(A), (True, False, False)),
    "remove-field-with-default": (avro([*A, f("b", "string", default="")]), avro(A),
                                  (True, True, True)),
    "widen-int-to-long": (avro(A), avro([f("a", "long")]), (True, False, False)),
    "narrow-long-to-int": (avro([f("a", "long")]), avro(A), (False, True, False)),
    "string-to-bytes": (avro([f("a", "string")]), avro([f("a", "bytes")]), (True, True, True)),
    "add-enum-symbol": (avro([f("e", {"type": "enum", "name": "E", "symbols": ["X"]})]),
                        avro([f("e", {"type": "enum", "name": "E", "symbols": ["X", "Y"]})]),
                        (True, False, False)),
    "add-enum-symbol-with-default": (
        avro([f("e", {"type": "enum", "name": "E", "symbols": ["X"], "default": "X"})]),
        avro([f("e", {"type": "enum", "name": "E", "symbols": ["X", "Y"], "default": "X"})]),
        (True, True, True)),
    "make-field-nullable": (avro(A), avro([f("a", ["null", "int"], default=None)]),
                            (True, False, False)),
    "rename-record": (avro(A), avro(A, name="S"), (False, False, False)),
    "rename-record-with-alias": (avro(A), avro(A, name="S", aliases=["R"]), (True, False, False)),
    "namespace-only": (avro(A, namespace="x"), avro(A, namespace="y"), (True, True, True)),
    "json-open-add-optional": (js({"type": "object", "properties": {"a": {"type": "string"}}}),
                               js({"type": "object", "properties": {"a": {"type": "string"},
                                                                    "b": {"type": "number"}}}),
                               (False, True, False)),
    "json-closed-add-optional": (
        js({"type": "object", "properties": {"a": {"type": "string"}},
            "additionalProperties": False}),
        js({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
            "additionalProperties": False}),
        (True, False, False)),
    "json-integer-to-number": (js({"type": "integer"}), js({"type": "number"}),
                               (True, False, False)),
    "json-raise-maxLength": (js({"type": "string", "maxLength": 5}),
                             js({"type": "string", "maxLength": 9}), (True, False, False)),
    "json-title-only": (js({"title": "a", "type": "string"}), js({"title": "b", "type": "string"}),
                        (True, True, True)),
}
LEVEL_CASES = [
    pytest.param(name, level, expected[i], id=f"{name}-{level}")
    for name, (_, _, expected) in CHANGES.items()
    for i, level in enumerate(("BACKWARD", "FORWARD", "FULL"))
]


@pytest.mark.parametrize(("change", "level", "compatible"), LEVEL_CASES)
def test_change_under_level(change, level, compatible):
    old, new, _ = CHANGES[change]
    messages = check_compatibility(level, new, [old])
    assert (messages == []) is compatible, messages
    assert (check_compatibility(level + "_TRANSITIVE", new, [old]) == []) is compatible
    assert check_compatibility("NONE", new, [old]) == []


# Three versions where the new one is compatible with the latest but not with the first.
V1 = avro(A)
V2 = avro([*A, f("b", "string", default="")])
V3 = avro([*A, f("b", "string")])  # reads v2 (b present) but not v1 (b missing, no default)
F1 = avro([*A, f("x", "int")])  # reads v3 data only if v3 writes x
F2 = avro([*A, f("x", "int", default=0)])
F3 = avro(A)


@pytest.mark.parametrize(("level", "new", "existing", "compatible"), [
    pytest.param("BACKWARD", V3, [V1, V2], True, id="backward-checks-latest-only"),
    pytest.param("BACKWARD_TRANSITIVE", V3, [V1, V2], False, id="backward-transitive-checks-all"),
    pytest.param("FORWARD", F3, [F1, F2], True, id="forward-checks-latest-only"),
    pytest.param("FORWARD_TRANSITIVE", F3, [F1, F2], False, id="forward-transitive-checks-all"),
    pytest.param("FULL", F3, [F1, F2], True, id="full-checks-latest-only"),
    pytest.param("FULL_TRANSITIVE", F3, [F1, F2], False, id="full-transitive-checks-all"),
    pytest.param("FULL_TRANSITIVE", V2, [V1], True, id="full-transitive-compatible-chain"),
    pytest.param("BACKWARD", V3, [V2, V1], False, id="latest-is-last-in-list"),
    pytest.param("NONE", V3, [V1, V2], True, id="none-checks-nothing"),
])
def test_transitive_versus_latest(level, new, existing, compatible):
    assert (check_compatibility(level, new, existing) == []) is compatible


def test_no_previous_versions_is_compatible():
    for level in COMPATIBILITY_LEVELS:
        assert check_compatibility(level, V3, []) == []


def test_transitive_reports_the_newest_failing_version():
    also_failing = avro([*A, f("c", "int")])  # v3 cannot read it either (b missing)
    messages = check_compatibility("BACKWARD_TRANSITIVE", V3, [V1, also_failing])
    assert messages[-1] == f"{{oldSchema: '{also_failing.canonical()}'}}"


def test_backward_message_format():
    assert check_compatibility("BACKWARD", V3, [V1]) == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path "
        "'/fields/1' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'b'}",
        f"{{oldSchema: '{V1.canonical()}'}}",
    ]


def test_forward_message_names_the_old_schema_as_reader():
    messages = check_compatibility("FORWARD", F3, [F1])
    assert messages == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'x' at path "
        "'/fields/1' in the old schema has no default value and is missing in the new schema', "
        "additionalInfo:'x'}",
        f"{{oldSchema: '{F1.canonical()}'}}",
    ]


def test_full_reports_both_directions():
    old = avro([f("a", "int"), f("x", "int")])
    new = avro([f("a", "long"), f("y", "int")])
    messages = check_compatibility("FULL", new, [old])
    kinds = [m.split("'")[1] for m in messages[:-1]]
    assert kinds == ["TYPE_MISMATCH", "READER_FIELD_MISSING_DEFAULT_VALUE",
                     "READER_FIELD_MISSING_DEFAULT_VALUE"]
    assert "in the old schema does not match with the new schema" in messages[0]
    assert messages[-1].startswith("{oldSchema: ")


def test_full_forward_only_failure_is_not_followed_by_old_schema():
    # Confluent appends the old schema after the backward half only
    messages = check_compatibility("FULL", F3, [F1])
    assert len(messages) == 1 and "READER_FIELD_MISSING_DEFAULT_VALUE" in messages[0]


def test_json_message_format():
    old = js({"type": "string", "maxLength": 9})
    new = js({"type": "string", "maxLength": 5})
    assert check_compatibility("BACKWARD", new, [old]) == [
        '{errorType:"MAX_LENGTH_DECREASED", description:"The value at path \'#/maxLength\' in '
        'the new schema is less than its value in the old schema"}',
        f"{{oldSchema: '{old.canonical()}'}}",
    ]
    assert check_compatibility("FORWARD", new, [old]) == []


@pytest.mark.parametrize("level", [lvl for lvl in COMPATIBILITY_LEVELS if lvl != "NONE"])
def test_different_schema_types_are_incompatible(level):
    messages = check_compatibility(level, js({"type": "string"}), [avro(A)])
    assert messages[0] == "Incompatible because of different schema type"


def test_none_allows_a_type_change():
    assert check_compatibility("NONE", js({"type": "string"}), [avro(A)]) == []


def test_level_is_case_insensitive_and_validated():
    assert check_compatibility("backward_transitive", V3, [V1, V2]) != []
    with pytest.raises(ValueError, match="Unknown compatibility level 'SIDEWAYS'"):
        check_compatibility("SIDEWAYS", V3, [V1])


def test_levels_constant():
    assert COMPATIBILITY_LEVELS == ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                                    "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
