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


T = TypeVar("T")


def copy_fields(
    source: Struct, target: Struct, copies: tuple[FieldCopy, ...], with_default: bool
) -> None:
    """Copy each pair's input field of ``source`` to its output field of ``target``.

    Passing ``Field`` objects of the structs' own schemas (not names) skips a name
    lookup per field; this loop is most of what a struct SMT costs per record.
    """
    read = Struct.get if with_default else Struct.get_without_default
    for source_field, target_field in copies:
        target.put(target_field, read(source, source_field))


class SchemaCache(Generic[T]):
    """What was derived from the last ``size`` input schemas (Kafka keeps 16 per SMT):
    the output schema, or a plan pairing input and output fields.

    Deriving builds and validates a new ``Schema``; records of one topic nearly always
    share their schema, so a hit turns that into a dict lookup. Not thread-safe, and
    needs not be: each task has its own transformation instance.
    """

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._entries: OrderedDict[Schema, T] = OrderedDict()

    def get_or_build(self, schema: Schema, build: Callable[[Schema], T]) -> T:
        """The cached derivation of ``schema``, building and caching it on a miss."""
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
