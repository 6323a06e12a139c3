"""Schema helpers shared by the transformations: copying metadata, reading struct fields,
and the per-instance cache of derived schemas."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from connect.api.data import Field, Schema, SchemaBuilder, Struct, Type

__all__ = [
    "FieldCopy",
    "SchemaCache",
    "builder_for",
    "copy_fields",
    "copy_schema_basics",
    "field_value",
]


def copy_schema_basics(source: Schema, builder: SchemaBuilder) -> SchemaBuilder:
    """Copy name, version, doc and parameters (not optionality, default or fields) from
    ``source`` onto ``builder``, as Kafka's ``SchemaUtil.copySchemaBasics`` does."""
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    return builder


def builder_for(source: Schema) -> SchemaBuilder:
    """A builder of ``source``'s type (with its element schemas for ARRAY and MAP) and its
    basics; fields, optionality and default are left for the caller."""
    if source.type is Type.ARRAY:
        builder = SchemaBuilder.array(source.value_schema)
    elif source.type is Type.MAP:
        builder = SchemaBuilder.map(source.key_schema, source.value_schema)
    else:
        builder = SchemaBuilder(source.type)
    return copy_schema_basics(source, builder)


#: A pair of fields (input, output) whose value is copied from one struct to the other.
FieldCopy = tuple[Field, Field]


def field_value(struct: Struct, field: Field | str, with_default: bool) -> Any:
    """A field's value, falling back to the field schema's default when ``with_default``
    (``replace.null.with.default``) and the value is null."""
    return struct.get(field) if with_default else struct.get_without_default(field)


def copy_fields(
    schema: Schema, source: Struct, copies: tuple[FieldCopy, ...], with_default: bool
) -> Struct:
    """A new struct of ``schema`` with each pair's input field of ``source`` copied to its
    output field; other fields are left unset.

    This loop is most of what a struct SMT costs per record, so the values are copied
    without validating them again: each pair's input and output fields have the same
    schema (the plans that make the pairs guarantee it), and ``source`` is valid.
    """
    values: list[Any] = [None] * len(schema.fields)
    read = source.values(with_defaults=with_default)
    for source_field, target_field in copies:
        values[target_field.index] = read[source_field.index]
    return Struct.from_values(schema, values, validate=False)


T = TypeVar("T")


class SchemaCache(Generic[T]):
    """What was derived from the last ``size`` input schemas (Kafka keeps 16 per SMT):
    the output schema, or a plan pairing input and output fields.

    Deriving builds and validates a new ``Schema``; records of one topic nearly always
    share their schema, so a hit turns that into a dict lookup. Not thread-safe, and
    needs not be: each task has its own transformation instance.
    """

    __slots__ = ("_entries", "_last", "_last_schema", "_size")

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._entries: OrderedDict[Schema, T] = OrderedDict()
        # The entry used last, found by identity: runs of records share one schema object.
        self._last_schema: Schema | None = None
        self._last: T | None = None

    def get_or_build(self, schema: Schema, build: Callable[[Schema], T]) -> T:
        """The cached derivation of ``schema``, building and caching it on a miss."""
        if schema is self._last_schema:
            return self._last  # type: ignore[return-value]
        derived = self._lookup(schema, build)
        self._last_schema, self._last = schema, derived
        return derived

    def _lookup(self, schema: Schema, build: Callable[[Schema], T]) -> T:
        entries = self._entries
        derived = entries.get(schema)
        if derived is not None:
            entries.move_to_end(schema)
            return derived
        derived = build(schema)
        entries[schema] = derived
        if len(entries) > self._size:
            entries.popitem(last=False)
        return derived

    def __len__(self) -> int:
        return len(self._entries)
