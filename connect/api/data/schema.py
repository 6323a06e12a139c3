"""Connect schemas: the type, shape and metadata of keys, values and headers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any, ClassVar

from connect.api.errors import DataError, SchemaBuilderError

__all__ = ["Field", "Schema", "SchemaAndValue", "Type"]


class Type(Enum):
    """The type of a schema; ``value`` is the lower-case name Kafka's converters write."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        """True for every type but ARRAY, MAP and STRUCT."""
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


@dataclass(frozen=True, slots=True)
class Field:
    """A field of a struct schema: its name, its position in the struct and its schema."""

    name: str
    index: int
    schema: Schema


class Schema:
    """An immutable Connect schema (Kafka's ``ConnectSchema``).

    Build schemas with ``SchemaBuilder`` or use the predefined ones
    (``Schema.INT32_SCHEMA``, ``Schema.OPTIONAL_STRING_SCHEMA`` ...). Two schemas are
    equal when type, optional flag, default value, name, version, doc, parameters, fields,
    key schema and value schema are all equal. Schemas are hashable; the hash leaves out
    the default value and parameters, which may hold unhashable values.

    ``key_schema`` (MAP only), ``value_schema`` (MAP and ARRAY) and ``fields``/``field()``
    (STRUCT only) raise ``DataError`` on other types, as Kafka's do. Logical types
    (``Decimal``, ``Date``, ``Time``, ``Timestamp``) are schemas of a primitive type with a
    well-known ``name``. Instances are safe to share between threads.
    """

    __slots__ = (
        "_check",
        "_default_value",
        "_doc",
        "_field_by_name",
        "_field_defaults",
        "_fields",
        "_hash",
        "_key_schema",
        "_name",
        "_optional",
        "_parameters",
        "_type",
        "_value_schema",
        "_version",
    )

    INT8_SCHEMA: ClassVar[Schema]
    INT16_SCHEMA: ClassVar[Schema]
    INT32_SCHEMA: ClassVar[Schema]
    INT64_SCHEMA: ClassVar[Schema]
    FLOAT32_SCHEMA: ClassVar[Schema]
    FLOAT64_SCHEMA: ClassVar[Schema]
    BOOLEAN_SCHEMA: ClassVar[Schema]
    STRING_SCHEMA: ClassVar[Schema]
    BYTES_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT8_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT16_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_BOOLEAN_SCHEMA: ClassVar[Schema]
    OPTIONAL_STRING_SCHEMA: ClassVar[Schema]
    OPTIONAL_BYTES_SCHEMA: ClassVar[Schema]

    def __init__(
        self,
        type: Type,
        *,
        optional: bool = False,
        default_value: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: Iterable[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        """Prefer ``SchemaBuilder``, which also checks the default value against the
        schema; this constructor checks only the shape (fields for STRUCT, key and value
        schemas for MAP, a value schema for ARRAY)."""
        if not isinstance(type, Type):
            raise SchemaBuilderError(f"Schema type must be a Type, not {type!r}.")
        field_tuple = tuple(fields) if fields is not None else ()
        if type is Type.STRUCT:
            _check_fields(field_tuple)
        elif field_tuple:
            raise SchemaBuilderError(f"Only STRUCT schemas have fields, not {type.value}.")
        if type is Type.MAP and (key_schema is None or value_schema is None):
            raise SchemaBuilderError("A MAP schema needs both a key schema and a value schema.")
        if type is Type.ARRAY and value_schema is None:
            raise SchemaBuilderError("An ARRAY schema needs a value schema for its elements.")
        if key_schema is not None and type is not Type.MAP:
            raise SchemaBuilderError(f"Only MAP schemas have a key schema, not {type.value}.")
        if value_schema is not None and type not in (Type.MAP, Type.ARRAY):
            raise SchemaBuilderError(
                f"Only MAP and ARRAY schemas have a value schema, not {type.value}."
            )
        self._type = type
        self._optional = bool(optional)
        self._default_value = default_value
        self._name = name
        self._version = version
        self._doc = doc
        self._parameters: Mapping[str, str] | None = (
            MappingProxyType(dict(parameters)) if parameters is not None else None
        )
        self._fields = field_tuple
        self._field_by_name = {f.name: f for f in field_tuple}
        # Whether any field has a default: Struct.values(with_defaults=True) copies
        # the values list as is when none has.
        self._field_defaults = any(f.schema.default_value is not None for f in field_tuple)
        self._key_schema = key_schema
        self._value_schema = value_schema
        # A fast validity predicate for values, compiled on first use by ``struct.py``.
        self._check = None
        self._hash = hash(
            (type, self._optional, name, version, doc, field_tuple, key_schema, value_schema)
        )

    def __setattr__(self, attr: str, value: Any) -> None:
        if hasattr(self, "_hash"):
            raise AttributeError("Schema is immutable; use SchemaBuilder.from_schema() to copy")
        object.__setattr__(self, attr, value)

    @property
    def type(self) -> Type:
        return self._type

    @property
    def optional(self) -> bool:
        """Whether ``None`` is a valid value."""
        return self._optional

    @property
    def default_value(self) -> Any:
        """The value used when none is given (``Struct.get`` of an unset field)."""
        return self._default_value

    @property
    def name(self) -> str | None:
        """Fully qualified name, e.g. ``com.example.Order`` or a logical type's name."""
        return self._name

    @property
    def version(self) -> int | None:
        return self._version

    @property
    def doc(self) -> str | None:
        return self._doc

    @property
    def parameters(self) -> Mapping[str, str] | None:
        """Read-only string parameters, e.g. a Decimal's ``scale``; None when unset."""
        return self._parameters

    @property
    def key_schema(self) -> Schema:
        if self._key_schema is None:
            raise DataError(f"Cannot look up key schema on non-map type {self._type.value}.")
        return self._key_schema

    @property
    def value_schema(self) -> Schema:
        if self._value_schema is None:
            raise DataError(
                f"Cannot look up value schema on non-array and non-map type {self._type.value}."
            )
        return self._value_schema

    @property
    def fields(self) -> tuple[Field, ...]:
        """The fields of a STRUCT schema, in index order."""
        if self._type is not Type.STRUCT:
            raise DataError(f"Cannot list fields on non-struct type {self._type.value}.")
        return self._fields

    def field(self, name: str) -> Field | None:
        """The field called ``name``, or None if the struct has no such field."""
        if self._type is not Type.STRUCT:
            raise DataError(f"Cannot look up fields on non-struct type {self._type.value}.")
        return self._field_by_name.get(name)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return self.equals_ignoring_default(other) and _values_equal(
            self._default_value, other._default_value
        )

    def equals_ignoring_default(self, other: Schema) -> bool:
        """Equality apart from the default value.

        A STRUCT schema's default is a ``Struct`` bound to the schema without its default
        (it cannot be bound to a schema that does not exist yet), so struct values are
        matched against struct schemas with this comparison.
        """
        return self is other or (
            self._hash == other._hash
            and self._type is other._type
            and self._optional == other._optional
            and self._name == other._name
            and self._version == other._version
            and self._doc == other._doc
            and self._parameters == other._parameters
            and self._fields == other._fields
            and self._key_schema == other._key_schema
            and self._value_schema == other._value_schema
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # Slots plus the immutability guard defeat pickle's default protocol; rebuild
        # through the constructor instead (Spark ships schemas to executors this way).
        state = {
            "optional": self._optional,
            "default_value": self._default_value,
            "name": self._name,
            "version": self._version,
            "doc": self._doc,
            "parameters": dict(self._parameters) if self._parameters is not None else None,
            "fields": self._fields if self._type is Type.STRUCT else None,
            "key_schema": self._key_schema,
            "value_schema": self._value_schema,
        }
        return (_rebuild_schema, (self._type, state))

    def __repr__(self) -> str:
        parts = [self._type.name]
        if self._name is not None:
            parts.append(f"name={self._name!r}")
        if self._optional:
            parts.append("optional=True")
        if self._default_value is not None:
            parts.append(f"default_value={self._default_value!r}")
        if self._version is not None:
            parts.append(f"version={self._version}")
        if self._parameters:
            parts.append(f"parameters={dict(self._parameters)!r}")
        if self._type is Type.STRUCT:
            inner = ", ".join(f"{f.name}: {f.schema!r}" for f in self._fields)
            parts.append(f"fields={{{inner}}}")
        if self._key_schema is not None:
            parts.append(f"key_schema={self._key_schema!r}")
        if self._value_schema is not None:
            parts.append(f"value_schema={self._value_schema!r}")
        return f"Schema({', '.join(parts)})"


def _rebuild_schema(type_: Type, state: dict[str, Any]) -> Schema:
    return Schema(type_, **state)


def _check_fields(fields: tuple[Field, ...]) -> None:
    seen: set[str] = set()
    for position, f in enumerate(fields):
        if not isinstance(f, Field):
            raise SchemaBuilderError(f"Struct fields must be Field objects, not {f!r}.")
        if f.index != position:
            raise SchemaBuilderError(
                f"Field {f.name!r} has index {f.index} but is at position {position}."
            )
        if f.name in seen:
            raise SchemaBuilderError(f"Duplicate field name {f.name!r} in struct schema.")
        seen.add(f.name)


def _values_equal(a: Any, b: Any) -> bool:
    # `is` first: a float NaN default must still make a schema equal to itself.
    return a is b or bool(a == b)


@dataclass(frozen=True, slots=True)
class SchemaAndValue:
    """A value with its schema, as converters return it; ``schema`` None means no schema."""

    schema: Schema | None
    value: Any

    NULL: ClassVar[SchemaAndValue]


SchemaAndValue.NULL = SchemaAndValue(None, None)


def _predefine() -> None:
    for type_ in (
        Type.INT8,
        Type.INT16,
        Type.INT32,
        Type.INT64,
        Type.FLOAT32,
        Type.FLOAT64,
        Type.BOOLEAN,
        Type.STRING,
        Type.BYTES,
    ):
        setattr(Schema, f"{type_.name}_SCHEMA", Schema(type_))
        setattr(Schema, f"OPTIONAL_{type_.name}_SCHEMA", Schema(type_, optional=True))


_predefine()
