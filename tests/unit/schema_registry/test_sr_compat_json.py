"""JSON Schema compatibility vectors: the differences from an original to an updated schema.

Each vector lists every difference expected ("TYPE #/path", compatible ones included) and
whether the change is compatible (the update can read everything the original allowed).
The difference names and the compatible set are Confluent's.
"""

from __future__ import annotations

import json

import pytest

from schema_registry.schemas import Reference, UnresolvedReferenceError, parse_schema
from schema_registry.schemas.json_compat import COMPATIBLE_CHANGES, Difference, diff


def differences(original, update, **kwargs):
    before = parse_schema("JSON", json.dumps(original), **kwargs).model().root
    after = parse_schema("JSON", json.dumps(update), **kwargs).model().root
    found = diff(before, after)
    return [f"{d.type} {d.pointer}" for d in found], all(d.compatible for d in found)


S, N, INT, B = {"type": "string"}, {"type": "number"}, {"type": "integer"}, {"type": "boolean"}
NULL = {"type": "null"}


def obj(props, **extra):
    return {"type": "object", "properties": props, **extra}


def closed(props, **extra):
    return obj(props, additionalProperties=False, **extra)


def prop(schema):
    return obj({"p": schema})


VECTORS = [
    # --- annotations and the empty schema ----------------------------------------------------
    pytest.param({"properties": {}}, {}, [], True, id="anything-to-empty"),
    pytest.param(S, True, [], True, id="anything-to-true"),
    pytest.param(False, S, [], True, id="false-to-anything"),
    pytest.param(S, False, ["TYPE_CHANGED #/"], False, id="anything-to-false"),
    pytest.param({}, S, ["TYPE_CHANGED #/"], False, id="empty-to-string"),
    pytest.param({"title": "a", **S}, {"title": "b", **S}, ["TITLE_CHANGED #/"], True,
                 id="title-changed"),
    pytest.param({"description": "a"}, {"description": "b"}, ["DESCRIPTION_CHANGED #/"], True,
                 id="description-changed"),
    pytest.param({"$id": "urn:a"}, {"$id": "urn:b"}, ["ID_CHANGED #/"], True, id="id-changed"),
    pytest.param({"default": 1, **N}, {"default": 2, **N}, ["DEFAULT_CHANGED #/"], True,
                 id="default-changed"),
    # --- types ------------------------------------------------------------------------------
    pytest.param({"type": "object"}, {"type": "array"}, ["TYPE_CHANGED #/"], False,
                 id="object-to-array"),
    pytest.param(S, N, ["TYPE_CHANGED #/"], False, id="string-to-number"),
    pytest.param(INT, N, ["TYPE_EXTENDED #/"], True, id="integer-widened-to-number"),
    pytest.param(N, INT, ["TYPE_NARROWED #/"], False, id="number-narrowed-to-integer"),
    pytest.param(B, B, [], True, id="boolean-unchanged"),
    pytest.param(NULL, B, ["TYPE_CHANGED #/"], False, id="null-to-boolean"),
    pytest.param({"type": ["string"]}, {"type": ["string", "null"]}, ["SUM_TYPE_EXTENDED #/"],
                 True, id="type-list-extended"),
    pytest.param({"type": ["string", "null"]}, {"type": "string"}, ["TYPE_CHANGED #/"], False,
                 id="type-list-narrowed"),
    pytest.param({"type": ["string", "integer"]}, {"type": ["integer", "string"]}, [], True,
                 id="type-list-reordered"),
    # --- string constraints ------------------------------------------------------------------
    pytest.param({**S, "maxLength": 10}, {**S, "maxLength": 12},
                 ["MAX_LENGTH_INCREASED #/maxLength"], True, id="maxLength-increased"),
    pytest.param({**S, "maxLength": 12}, {**S, "maxLength": 10},
                 ["MAX_LENGTH_DECREASED #/maxLength"], False, id="maxLength-decreased"),
    pytest.param(S, {**S, "maxLength": 10}, ["MAX_LENGTH_ADDED #/maxLength"], False,
                 id="maxLength-added"),
    pytest.param({**S, "maxLength": 10}, S, ["MAX_LENGTH_REMOVED #/maxLength"], True,
                 id="maxLength-removed"),
    pytest.param({**S, "minLength": 10}, {**S, "minLength": 11},
                 ["MIN_LENGTH_INCREASED #/minLength"], False, id="minLength-increased"),
    pytest.param({**S, "minLength": 11}, {**S, "minLength": 10},
                 ["MIN_LENGTH_DECREASED #/minLength"], True, id="minLength-decreased"),
    pytest.param(S, {**S, "pattern": "^a"}, ["PATTERN_ADDED #/pattern"], False,
                 id="pattern-added"),
    pytest.param({**S, "pattern": "^a"}, S, ["PATTERN_REMOVED #/pattern"], True,
                 id="pattern-removed"),
    pytest.param({**S, "pattern": "^a"}, {**S, "pattern": "^b"}, ["PATTERN_CHANGED #/pattern"],
                 False, id="pattern-changed"),
    pytest.param({**S, "format": "date"}, {**S, "format": "uuid"}, [], True,
                 id="format-not-compared"),
    # --- number constraints ------------------------------------------------------------------
    pytest.param({**N, "maximum": 10}, {**N, "maximum": 11}, ["MAXIMUM_INCREASED #/maximum"],
                 True, id="maximum-increased"),
    pytest.param({**N, "maximum": 11}, {**N, "maximum": 10}, ["MAXIMUM_DECREASED #/maximum"],
                 False, id="maximum-decreased"),
    pytest.param(N, {**N, "maximum": 10}, ["MAXIMUM_ADDED #/maximum"], False,
                 id="maximum-added"),
    pytest.param({**N, "minimum": 10}, {**N, "minimum": 11}, ["MINIMUM_INCREASED #/minimum"],
                 False, id="minimum-increased"),
    pytest.param({**N, "minimum": 11}, {**N, "minimum": 10}, ["MINIMUM_DECREASED #/minimum"],
                 True, id="minimum-decreased"),
    pytest.param({**N, "minimum": 10}, N, ["MINIMUM_REMOVED #/minimum"], True,
                 id="minimum-removed"),
    pytest.param({**N, "exclusiveMaximum": 5}, {**N, "exclusiveMaximum": 4},
                 ["EXCLUSIVE_MAXIMUM_DECREASED #/exclusiveMaximum"], False,
                 id="exclusiveMaximum-decreased"),
    pytest.param({**N, "exclusiveMinimum": 5}, {**N, "exclusiveMinimum": 4},
                 ["EXCLUSIVE_MINIMUM_DECREASED #/exclusiveMinimum"], True,
                 id="exclusiveMinimum-decreased"),
    pytest.param({**N, "multipleOf": 10}, {**N, "multipleOf": 2},
                 ["MULTIPLE_OF_REDUCED #/multipleOf"], True, id="multipleOf-reduced"),
    pytest.param({**N, "multipleOf": 2}, {**N, "multipleOf": 10},
                 ["MULTIPLE_OF_EXPANDED #/multipleOf"], False, id="multipleOf-expanded"),
    pytest.param({**N, "multipleOf": 10}, {**N, "multipleOf": 11},
                 ["MULTIPLE_OF_CHANGED #/multipleOf"], False, id="multipleOf-changed"),
    pytest.param({**N, "multipleOf": 0.5}, {**N, "multipleOf": 0.25},
                 ["MULTIPLE_OF_REDUCED #/multipleOf"], True, id="multipleOf-fractional"),
    pytest.param(N, {**N, "multipleOf": 3}, ["MULTIPLE_OF_ADDED #/multipleOf"], False,
                 id="multipleOf-added"),
    # --- enum, const, not ----------------------------------------------------------------------
    pytest.param({"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, ["ENUM_ARRAY_EXTENDED #/enum"],
                 True, id="enum-extended"),
    pytest.param({"enum": ["a", "b"]}, {"enum": ["a"]}, ["ENUM_ARRAY_NARROWED #/enum"], False,
                 id="enum-narrowed"),
    pytest.param({"enum": ["a", "b"]}, {"enum": ["a", "c"]}, ["ENUM_ARRAY_CHANGED #/enum"],
                 False, id="enum-changed"),
    pytest.param({"enum": ["a", "b"]}, {"enum": ["b", "a"]}, [], True, id="enum-reordered"),
    pytest.param({**S, "enum": ["red"]}, S, ["PRODUCT_TYPE_NARROWED #/"], True,
                 id="enum-removed-from-typed-schema"),
    pytest.param(S, {**S, "enum": ["red"]}, ["TYPE_CHANGED #/"], False,
                 id="enum-added-to-typed-schema"),
    pytest.param({**S, "enum": ["a"]}, {**S, "enum": ["a", "b"]},
                 ["ENUM_ARRAY_EXTENDED #/allOf/1/enum"], True, id="typed-enum-extended"),
    pytest.param(prop({"const": "red"}), prop({"const": "blue"}),
                 ["ENUM_ARRAY_CHANGED #/properties/p/const"], False, id="const-changed"),
    pytest.param({"not": N}, {"not": INT}, ["NOT_TYPE_NARROWED #/not"], True,
                 id="not-narrowed"),
    pytest.param({"not": INT}, {"not": N}, ["NOT_TYPE_EXTENDED #/not"], False, id="not-extended"),
    # --- objects: open content model --------------------------------------------------------
    pytest.param(obj({"a": S}), obj({"a": S, "b": N}),
                 ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"], False,
                 id="open-optional-property-added"),
    pytest.param(obj({"a": S}), obj({"a": S, "b": N}, required=["b"]),
                 ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"], False,
                 id="open-required-property-added"),
    pytest.param(obj({"a": S}), obj({"a": S, "b": {**N, "default": 0}}, required=["b"]),
                 ["REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"],
                 False, id="open-required-property-with-default-added"),
    pytest.param(obj({"a": S}), obj({"a": S, "b": {}}),
                 ["PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"], True,
                 id="open-empty-property-added"),
    pytest.param(obj({"a": S, "b": N}), obj({"a": S}),
                 ["PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/b"], True,
                 id="open-property-removed"),
    pytest.param(obj({"a": S}, additionalProperties=True), obj({"a": S, "b": N},
                                                                additionalProperties=True),
                 ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"], False,
                 id="explicitly-open-property-added"),
    pytest.param({"properties": {"foo": S}}, {"properties": {"bar": S}},
                 ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/bar",
                  "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/foo"], False,
                 id="open-property-renamed"),
    pytest.param(obj({"a": S}), obj({"a": N}), ["TYPE_CHANGED #/properties/a"], False,
                 id="property-type-changed"),
    pytest.param(obj({"a": INT}), obj({"a": N}), ["TYPE_EXTENDED #/properties/a"], True,
                 id="property-type-widened"),
    # --- objects: closed content model ------------------------------------------------------
    pytest.param(closed({"a": S}), closed({"a": S, "b": N}),
                 ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"], True,
                 id="closed-optional-property-added"),
    pytest.param(closed({"a": S}), closed({"a": S, "b": N}, required=["b"]),
                 ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"], False,
                 id="closed-required-property-added"),
    pytest.param(closed({"a": S}), closed({"a": S, "b": {**N, "default": 1}}, required=["b"]),
                 ["REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"],
                 True, id="closed-required-property-with-default-added"),
    pytest.param(closed({"a": S, "b": N}), closed({"a": S}),
                 ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"], False,
                 id="closed-property-removed"),
    pytest.param(closed({"a": S, "b": False}), closed({"a": S}),
                 ["PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"], True,
                 id="closed-false-property-removed"),
    pytest.param(closed({"a": S}), obj({"a": S}),
                 ["ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], True,
                 id="closed-model-opened"),
    pytest.param(obj({"a": S}), closed({"a": S}),
                 ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"], False,
                 id="open-model-closed"),
    pytest.param({"additionalProperties": True}, {"additionalProperties": N},
                 ["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"], False,
                 id="additionalProperties-narrowed"),
    pytest.param({"additionalProperties": N}, {"additionalProperties": True},
                 ["ADDITIONAL_PROPERTIES_EXTENDED #/additionalProperties"], True,
                 id="additionalProperties-extended"),
    pytest.param({"additionalProperties": S}, {"additionalProperties": N},
                 ["TYPE_CHANGED #/additionalProperties"], False,
                 id="additionalProperties-schema-changed"),
    # --- objects: partially open content model ----------------------------------------------
    pytest.param(obj({"a": S}, additionalProperties=S), obj({"a": S, "b": S},
                                                            additionalProperties=S),
                 ["PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
                  "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"], True,
                 id="partial-added-covered"),
    pytest.param(obj({"a": S}, additionalProperties=S), obj({"a": S, "b": N},
                                                            additionalProperties=S),
                 ["TYPE_CHANGED #/properties/b",
                  "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
                  "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"], False,
                 id="partial-added-not-covered"),
    pytest.param(closed({"a": S}, patternProperties={"^I_": INT}),
                 closed({"a": S, "I_1": N}, patternProperties={"^I_": INT}),
                 ["TYPE_EXTENDED #/properties/I_1",
                  "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/I_1",
                  "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/I_1"], True,
                 id="pattern-property-added-covered"),
    pytest.param(obj({"a": S}, patternProperties={"^x_": S}),
                 obj({"a": S, "x_1": S}, patternProperties={"^x_": S}),
                 ["PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/x_1",
                  "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/x_1"], True,
                 id="pattern-properties-make-the-model-partially-open"),
    pytest.param(obj({"a": S}, patternProperties={"^x_": S}),
                 obj({"a": S, "x_1": N}, patternProperties={"^x_": S}),
                 ["TYPE_CHANGED #/properties/x_1",
                  "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/x_1",
                  "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/x_1"], False,
                 id="pattern-property-added-not-covered"),
    pytest.param(closed({"a": S, "b": S}), obj({"a": S}, additionalProperties=S),
                 ["PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
                  "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], True,
                 id="partial-removed-covered"),
    pytest.param(closed({"a": S, "b": N}), obj({"a": S}, additionalProperties=S),
                 ["TYPE_CHANGED #/properties/b",
                  "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
                  "ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"], False,
                 id="partial-removed-not-covered"),
    # --- required, dependencies, property counts ---------------------------------------------
    pytest.param(obj({"a": S}), obj({"a": S}, required=["a"]),
                 ["REQUIRED_ATTRIBUTE_ADDED #/required/a"], False, id="required-added"),
    pytest.param(obj({"a": S}), obj({"a": {**S, "default": "x"}}, required=["a"]),
                 ["REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED #/required/a",
                  "DEFAULT_CHANGED #/properties/a"], True,
                 id="required-with-default-added"),
    pytest.param(obj({"a": S}, required=["a"]), obj({"a": S}),
                 ["REQUIRED_ATTRIBUTE_REMOVED #/required/a"], True, id="required-removed"),
    pytest.param(obj({"a": N, "b": S}, dependencies={"a": ["b"]}),
                 obj({"a": N, "b": S}, dependencies={"b": ["a"]}),
                 ["DEPENDENCY_ARRAY_REMOVED #/dependencies/a",
                  "DEPENDENCY_ARRAY_ADDED #/dependencies/b"], False,
                 id="dependency-arrays-swapped"),
    pytest.param(obj({"a": N, "b": S, "c": S}, dependencies={"a": ["b", "c"]}),
                 obj({"a": N, "b": S, "c": S}, dependencies={"a": ["b"]}),
                 ["DEPENDENCY_ARRAY_NARROWED #/dependencies/a"], True,
                 id="dependency-array-narrowed"),
    pytest.param({"dependencies": {"a": S, "b": S}}, {"dependencies": {"a": S}},
                 ["DEPENDENCY_SCHEMA_REMOVED #/dependencies/b"], True,
                 id="dependency-schema-removed"),
    pytest.param({"dependencies": {"a": S}}, {"dependencies": {"a": N}},
                 ["TYPE_CHANGED #/dependencies/a"], False, id="dependency-schema-changed"),
    pytest.param({"maxProperties": 2}, {"maxProperties": 1},
                 ["MAX_PROPERTIES_DECREASED #/maxProperties"], False,
                 id="maxProperties-decreased"),
    pytest.param({"minProperties": 2}, {"minProperties": 1},
                 ["MIN_PROPERTIES_DECREASED #/minProperties"], True,
                 id="minProperties-decreased"),
    # --- arrays ------------------------------------------------------------------------------
    pytest.param({"type": "array", "items": INT}, {"type": "array", "items": N},
                 ["TYPE_EXTENDED #/items"], True, id="items-widened"),
    pytest.param({"type": "array", "items": S}, {"type": "array", "items": N},
                 ["TYPE_CHANGED #/items"], False, id="items-changed"),
    pytest.param({"type": "array"}, {"type": "array", "items": S}, ["SCHEMA_ADDED #/items"],
                 False, id="items-added"),
    pytest.param({"type": "array", "items": S}, {"type": "array"}, ["SCHEMA_REMOVED #/items"],
                 True, id="items-removed"),
    pytest.param({"type": "array", "items": [S, N]}, {"type": "array"},
                 ["ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/0",
                  "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/1"], True,
                 id="tuple-items-removed-open"),
    pytest.param({"type": "array", "items": [S], "additionalItems": False},
                 {"type": "array", "items": [S, N], "additionalItems": False},
                 ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"], True,
                 id="tuple-item-added-closed"),
    pytest.param({"type": "array", "items": [S, N], "additionalItems": False},
                 {"type": "array", "items": [S], "additionalItems": False},
                 ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"], False,
                 id="tuple-item-removed-closed"),
    pytest.param({"type": "array", "items": [S]}, {"type": "array", "items": [S, N]},
                 ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"], False,
                 id="tuple-item-added-open"),
    pytest.param({"type": "array", "items": [S], "additionalItems": S},
                 {"type": "array", "items": [S, N], "additionalItems": S},
                 ["TYPE_CHANGED #/items/1",
                  "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"], False,
                 id="tuple-item-added-not-covered"),
    pytest.param({"type": "array", "items": [S]}, {"type": "array", "items": [N]},
                 ["TYPE_CHANGED #/items/0"], False, id="tuple-item-changed"),
    pytest.param({"additionalItems": True}, {"additionalItems": False},
                 ["ADDITIONAL_ITEMS_REMOVED #/additionalItems"], False,
                 id="additionalItems-removed"),
    pytest.param({"type": "array", "maxItems": 2}, {"type": "array", "maxItems": 1},
                 ["MAX_ITEMS_DECREASED #/maxItems"], False, id="maxItems-decreased"),
    pytest.param({"type": "array", "minItems": 2}, {"type": "array", "minItems": 1},
                 ["MIN_ITEMS_DECREASED #/minItems"], True, id="minItems-decreased"),
    pytest.param({"type": "array", "minItems": 1}, {"type": "array", "minItems": 2},
                 ["MIN_ITEMS_INCREASED #/minItems"], False, id="minItems-increased"),
    pytest.param({"type": "array", "uniqueItems": True}, {"type": "array"},
                 ["UNIQUE_ITEMS_REMOVED #/uniqueItems"], True, id="uniqueItems-removed"),
    pytest.param({"type": "array"}, {"type": "array", "uniqueItems": True},
                 ["UNIQUE_ITEMS_ADDED #/uniqueItems"], False, id="uniqueItems-added"),
    # --- combined schemas ----------------------------------------------------------------------
    pytest.param(S, {"oneOf": [N, S]}, ["SUM_TYPE_EXTENDED #/"], True, id="type-to-oneOf"),
    pytest.param(S, {"anyOf": [N, B]}, ["TYPE_CHANGED #/"], False, id="type-to-oneOf-without-it"),
    pytest.param({**S, "maxLength": 3}, {"oneOf": [N, S]},
                 ["MAX_LENGTH_REMOVED #/maxLength", "SUM_TYPE_EXTENDED #/"], True,
                 id="type-to-oneOf-widened-branch"),
    pytest.param({"oneOf": [S]}, {"oneOf": [N, S]}, ["SUM_TYPE_EXTENDED #/"], True,
                 id="oneOf-branch-added"),
    pytest.param({"oneOf": [N, S]}, {"oneOf": [S]}, ["SUM_TYPE_NARROWED #/"], False,
                 id="oneOf-branch-removed"),
    pytest.param({"oneOf": [S]}, {"oneOf": [N]}, ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"], False,
                 id="oneOf-branch-replaced"),
    pytest.param({"allOf": [S, {"maxLength": 5}]}, {"allOf": [S]},
                 ["PRODUCT_TYPE_NARROWED #/"], True, id="allOf-conjunct-removed"),
    pytest.param({"allOf": [S]}, {"allOf": [S, {"maxLength": 5}]},
                 ["PRODUCT_TYPE_EXTENDED #/"], False, id="allOf-conjunct-added"),
    pytest.param({"allOf": [S, N]}, {"allOf": [N, S]}, [], True, id="allOf-reordered"),
    pytest.param({"oneOf": [S]}, {"anyOf": [N, S]},
                 ["COMBINED_TYPE_EXTENDED #/", "SUM_TYPE_EXTENDED #/"], True,
                 id="oneOf-to-anyOf"),
    pytest.param({"anyOf": [N, S]}, {"oneOf": [S]}, ["COMBINED_TYPE_CHANGED #/"], False,
                 id="anyOf-to-oneOf"),
    pytest.param({"oneOf": [N, S]}, {"allOf": [S]}, ["COMBINED_TYPE_CHANGED #/"], False,
                 id="oneOf-to-allOf"),
    pytest.param({"allOf": [N, S]}, {"anyOf": [S]},
                 ["COMBINED_TYPE_EXTENDED #/", "PRODUCT_TYPE_NARROWED #/"], True,
                 id="allOf-to-anyOf-fewer"),
    pytest.param(prop({"oneOf": [{**S, "maxLength": 5}]}),
                 prop({"oneOf": [B, {**S, "maxLength": 8}]}),
                 ["SUM_TYPE_EXTENDED #/properties/p",
                  "MAX_LENGTH_INCREASED #/properties/p/oneOf/0/maxLength"], True,
                 id="oneOf-matched-branch-diffs-reported"),
    pytest.param(prop({"allOf": [S, S]}), prop({"allOf": [S]}), [], True,
                 id="allOf-duplicates-collapse"),
    # --- references ----------------------------------------------------------------------------
    pytest.param({"type": "array", "items": {"$ref": "#/definitions/x"},
                  "definitions": {"x": S}},
                 {"type": "array", "items": {"$ref": "#/definitions/x"},
                  "definitions": {"x": N}}, ["TYPE_CHANGED #/items"], False,
                 id="local-ref-target-changed"),
    pytest.param(S, {"$ref": "#/definitions/x", "definitions": {"x": S}}, [], True,
                 id="moved-into-definition"),
    pytest.param({"$ref": "#/$defs/x", "$defs": {"x": S}}, S, [], True,
                 id="moved-out-of-definition"),
]


@pytest.mark.parametrize(("original", "update", "changes", "compatible"), VECTORS)
def test_difference_vectors(original, update, changes, compatible):
    assert differences(original, update) == (changes, compatible)


TREE = {"$ref": "#/definitions/node", "definitions": {"node": {
    "type": "object",
    "properties": {"value": INT, "children": {"type": "array",
                                             "items": {"$ref": "#/definitions/node"}}},
    "additionalProperties": False}}}


def test_recursive_schema_terminates_and_finds_deep_changes():
    assert differences(TREE, TREE) == ([], True)
    wider = json.loads(json.dumps(TREE))
    wider["definitions"]["node"]["properties"]["value"] = N
    assert differences(TREE, wider) == (["TYPE_EXTENDED #/properties/value"], True)
    assert differences(wider, TREE) == (["TYPE_NARROWED #/properties/value"], False)


def test_referenced_schema_changes_are_compared():
    store = {("addr", 1): ("JSON", json.dumps(obj({"street": S})), []),
             ("addr", 2): ("JSON", json.dumps(obj({"street": N})), [])}

    def resolve(ref):
        if (ref.subject, ref.version) not in store:
            raise UnresolvedReferenceError(f"{ref.subject} {ref.version} not found")
        return store[(ref.subject, ref.version)]

    def using(version):
        return parse_schema("JSON", json.dumps(obj({"a": {"$ref": "addr.json"}})),
                            [Reference("addr.json", "addr", version)], resolve)

    assert diff(using(1).model().root, using(1).model().root) == []
    assert [f"{d.type} {d.pointer}" for d in diff(using(1).model().root,
                                                   using(2).model().root)] == [
        "TYPE_CHANGED #/properties/a/properties/street"]


def test_compatible_changes_are_confluents_strict_set():
    assert "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" in COMPATIBLE_CHANGES
    assert "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" not in COMPATIBLE_CHANGES
    assert "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL" in COMPATIBLE_CHANGES
    assert "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" not in COMPATIBLE_CHANGES


@pytest.mark.parametrize(("kind", "expected"), [
    pytest.param("MAX_LENGTH_DECREASED", "The value at path '#/maxLength' in the new schema is "
                 "less than its value in the old schema", id="value-decreased"),
    pytest.param("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "The new schema has an open "
                 "content model and has a property or item at path '#/maxLength' which is "
                 "missing in the old schema", id="added-to-open"),
    pytest.param("TYPE_CHANGED", "A type at path '#/maxLength' is different between the new "
                 "schema and the old schema", id="type-changed"),
])
def test_descriptions_in_confluents_words(kind, expected):
    message = Difference(kind, ("maxLength",)).describe("new", "old")
    assert message == f'{{errorType:"{kind}", description:"{expected}"}}'
