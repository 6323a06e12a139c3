"""Schemas and SchemaBuilder: shapes, predefined schemas, equality, defaults, immutability."""

from __future__ import annotations

import pickle

import pytest

from connect.api.data import Field, Schema, SchemaBuilder, Struct, Type
from connect.api.errors import DataError, SchemaBuilderError

PRIMITIVES = [
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
]


@pytest.mark.parametrize("type_", PRIMITIVES)
def test_predefined_schemas_have_their_type_and_optional_flag(type_):
    required = getattr(Schema, f"{type_.name}_SCHEMA")
    optional = getattr(Schema, f"OPTIONAL_{type_.name}_SCHEMA")
    assert (required.type, required.optional) == (type_, False)
    assert (optional.type, optional.optional) == (type_, True)
    assert required.name is None and required.default_value is None
    assert required != optional


@pytest.mark.parametrize("type_", PRIMITIVES)
def test_builder_factory_per_primitive_type(type_):
    factory = getattr(SchemaBuilder, "boolean" if type_ is Type.BOOLEAN else type_.value)
    assert factory().build() == getattr(Schema, f"{type_.name}_SCHEMA")


def test_type_names_and_primitiveness():
    assert Type.FLOAT64.value == "float64" and Type.STRUCT.value == "struct"
    assert [t for t in Type if not t.is_primitive] == [Type.ARRAY, Type.MAP, Type.STRUCT]


def test_struct_builder_fields_in_order_with_indexes():
    schema = (
        SchemaBuilder.struct()
        .name("com.example.Order")
        .version(3)
        .doc("an order")
        .field("id", Schema.INT64_SCHEMA)
        .field("note", SchemaBuilder.string().optional())
        .build()
    )
    assert schema.type is Type.STRUCT
    assert [(f.name, f.index) for f in schema.fields] == [("id", 0), ("note", 1)]
    assert schema.field("note") == Field("note", 1, Schema.OPTIONAL_STRING_SCHEMA)
    assert schema.field("missing") is None
    assert (schema.name, schema.version, schema.doc) == ("com.example.Order", 3, "an order")


def test_array_and_map_schemas_expose_element_schemas():
    array = SchemaBuilder.array(Schema.STRING_SCHEMA).build()
    mapping = SchemaBuilder.map(Schema.STRING_SCHEMA, SchemaBuilder.int32().optional()).build()
    assert array.value_schema == Schema.STRING_SCHEMA
    assert mapping.key_schema == Schema.STRING_SCHEMA
    assert mapping.value_schema == Schema.OPTIONAL_INT32_SCHEMA
    with pytest.raises(DataError, match="non-map"):
        _ = array.key_schema


@pytest.mark.parametrize(
    "schema, accessor",
    [
        (Schema.INT32_SCHEMA, lambda s: s.key_schema),
        (Schema.INT32_SCHEMA, lambda s: s.value_schema),
        (Schema.STRING_SCHEMA, lambda s: s.fields),
        (Schema.STRING_SCHEMA, lambda s: s.field("x")),
    ],
)
def test_shape_accessors_raise_on_the_wrong_type(schema, accessor):
    with pytest.raises(DataError):
        accessor(schema)


def test_fields_only_on_struct_builders_and_names_unique():
    with pytest.raises(SchemaBuilderError, match="Cannot create fields on type int32"):
        SchemaBuilder.int32().field("x", Schema.INT32_SCHEMA)
    builder = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA)
    with pytest.raises(SchemaBuilderError, match="'x'"):
        builder.field("x", Schema.STRING_SCHEMA)


def test_constructor_checks_shape():
    with pytest.raises(SchemaBuilderError):
        Schema(Type.MAP, value_schema=Schema.INT32_SCHEMA)
    with pytest.raises(SchemaBuilderError):
        Schema(Type.ARRAY)
    with pytest.raises(SchemaBuilderError):
        Schema(Type.INT32, fields=[Field("a", 0, Schema.INT32_SCHEMA)])
    with pytest.raises(SchemaBuilderError, match="index 1"):
        Schema(Type.STRUCT, fields=[Field("a", 1, Schema.INT32_SCHEMA)])
    with pytest.raises(SchemaBuilderError):
        Schema(Type.STRING, key_schema=Schema.STRING_SCHEMA)


def _order(**changes):
    builder = SchemaBuilder.struct().name(changes.get("name", "Order"))
    builder.version(changes.get("version", 1)).doc(changes.get("doc", "doc"))
    builder.parameter("p", changes.get("parameter", "v"))
    if changes.get("optional"):
        builder.optional()
    builder.field("id", changes.get("id_schema", Schema.INT64_SCHEMA))
    return builder.build()


def test_equal_definitions_are_equal_and_hash_alike():
    assert _order() == _order()
    assert hash(_order()) == hash(_order())
    assert len({_order(), _order()}) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"name": "Other"},
        {"version": 2},
        {"doc": "other"},
        {"parameter": "w"},
        {"optional": True},
        {"id_schema": Schema.INT32_SCHEMA},
    ],
)
def test_any_difference_makes_schemas_unequal(change):
    assert _order(**change) != _order()


def test_default_value_takes_part_in_equality():
    assert SchemaBuilder.int32().default_value(1).build() != Schema.INT32_SCHEMA
    assert SchemaBuilder.int32().default_value(1).build() == (
        SchemaBuilder.int32().default_value(1).build()
    )


def test_build_checks_the_default_against_the_schema():
    with pytest.raises(SchemaBuilderError, match="Invalid default value"):
        SchemaBuilder.int8().default_value(300).build()
    with pytest.raises(SchemaBuilderError):
        SchemaBuilder.string().default_value(b"bytes").build()
    assert SchemaBuilder.bytes().default_value(b"x").build().default_value == b"x"


def test_struct_default_is_a_struct_of_the_schema_without_default():
    point = SchemaBuilder.struct().name("Point").field("x", Schema.INT32_SCHEMA).build()
    origin = Struct(point).put("x", 0)
    with_default = SchemaBuilder.from_schema(point).default_value(origin).build()
    assert with_default.default_value == origin
    holder = SchemaBuilder.struct().field("at", with_default).build()
    struct = Struct(holder)
    struct.validate()
    assert struct.get("at") == origin
    struct.put("at", Struct(with_default).put("x", 4))
    struct.validate()


def test_schemas_are_immutable():
    schema = SchemaBuilder.string().parameter("k", "v").build()
    with pytest.raises(AttributeError):
        schema._name = "changed"
    with pytest.raises(TypeError):
        schema.parameters["k"] = "w"


def test_builder_copies_parameters_so_later_changes_do_not_leak():
    builder = SchemaBuilder.string().parameter("k", "v")
    schema = builder.build()
    builder.parameter("k", "changed")
    assert schema.parameters == {"k": "v"}


def test_from_schema_copies_every_attribute():
    original = _order()
    assert SchemaBuilder.from_schema(original).build() == original
    renamed = SchemaBuilder.from_schema(original).name("Renamed").optional().build()
    assert (renamed.name, renamed.optional, renamed.fields) == ("Renamed", True, original.fields)


def test_parameters_must_be_strings():
    with pytest.raises(SchemaBuilderError):
        SchemaBuilder.bytes().parameter("scale", 2)


def test_pickle_round_trip_keeps_equality():
    nested = SchemaBuilder.struct().field(
        "m", SchemaBuilder.map(Schema.STRING_SCHEMA, SchemaBuilder.array(Schema.INT8_SCHEMA))
    )
    schema = nested.field("d", SchemaBuilder.int32().default_value(7)).build()
    copy = pickle.loads(pickle.dumps(schema))
    assert copy == schema and hash(copy) == hash(schema)


def test_repr_names_type_and_attributes():
    text = repr(_order())
    assert (
        text.startswith("Schema(STRUCT") and "name='Order'" in text and "id: Schema(INT64)" in text
    )


def test_struct_owning_takes_the_list_as_is():
    """``Struct.owning`` is ``from_values(..., validate=False)`` without the copy: the list
    becomes the struct's own, and the struct is equal to the validated one."""
    schema = (SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA)
              .field("name", Schema.OPTIONAL_STRING_SCHEMA).build())
    values = [1, "a"]
    owned = Struct.owning(schema, values)
    assert owned == Struct.from_values(schema, [1, "a"]) and owned.schema is schema
    assert owned.get("name") == "a"
    owned.validate()
    values[1] = "b"  # the same list: for code that builds a new one per struct
    assert owned.get("name") == "b"
    owned.put("name", "c")
    assert values == [1, "c"]
