"""SchemaBuilder: the fluent way to define Connect schemas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.data.schema import Field, Schema, Type
from connect.api.data.struct import validate_value
from connect.api.errors import DataError, SchemaBuilderError

__all__ = ["SchemaBuilder"]


class SchemaBuilder:
    """Builds an immutable ``Schema``, one attribute per call::

        order = (
            SchemaBuilder.struct()
            .name("com.example.Order")
            .field("id", Schema.INT64_SCHEMA)
            .field("note", SchemaBuilder.string().optional())
            .build()
        )

    Every setter returns the builder; a later call overrides an earlier one (parameters
    and fields accumulate). A builder is accepted wherever a field, key or value schema
    is expected and is built there. ``build()`` checks the default value against the
    finished schema and raises ``SchemaBuilderError`` naming the problem. A builder is a
    plain mutable object: use it from one thread.
    """

    __slots__ = (
        "_default_value",
        "_doc",
        "_fields",
        "_key_schema",
        "_name",
        "_optional",
        "_parameters",
        "_type",
        "_value_schema",
        "_version",
    )

    def __init__(self, type: Type) -> None:
        if not isinstance(type, Type):
            raise SchemaBuilderError(f"SchemaBuilder needs a Type, not {type!r}.")
        self._type = type
        self._optional = False
        self._default_value: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] | None = {} if type is Type.STRUCT else None
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories, one per type --------------------------------------------------------

    @staticmethod
    def int8() -> SchemaBuilder:
        return SchemaBuilder(Type.INT8)

    @staticmethod
    def int16() -> SchemaBuilder:
        return SchemaBuilder(Type.INT16)

    @staticmethod
    def int32() -> SchemaBuilder:
        return SchemaBuilder(Type.INT32)

    @staticmethod
    def int64() -> SchemaBuilder:
        return SchemaBuilder(Type.INT64)

    @staticmethod
    def float32() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT32)

    @staticmethod
    def float64() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT64)

    @staticmethod
    def boolean() -> SchemaBuilder:
        return SchemaBuilder(Type.BOOLEAN)

    @staticmethod
    def string() -> SchemaBuilder:
        return SchemaBuilder(Type.STRING)

    @staticmethod
    def bytes() -> SchemaBuilder:
        return SchemaBuilder(Type.BYTES)

    @staticmethod
    def struct() -> SchemaBuilder:
        return SchemaBuilder(Type.STRUCT)

    @staticmethod
    def array(value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """An ARRAY whose elements are ``value_schema`` values."""
        builder = SchemaBuilder(Type.ARRAY)
        builder._value_schema = _built(value_schema, "array value schema")
        return builder

    @staticmethod
    def map(
        key_schema: Schema | SchemaBuilder, value_schema: Schema | SchemaBuilder
    ) -> SchemaBuilder:
        """A MAP from ``key_schema`` values to ``value_schema`` values."""
        builder = SchemaBuilder(Type.MAP)
        builder._key_schema = _built(key_schema, "map key schema")
        builder._value_schema = _built(value_schema, "map value schema")
        return builder

    @staticmethod
    def from_schema(schema: Schema) -> SchemaBuilder:
        """A builder holding a copy of every attribute of ``schema``, to derive a variant
        (another name, optional, an extra field) as transformations do."""
        builder = SchemaBuilder(schema.type)
        builder._optional = schema.optional
        builder._default_value = schema.default_value
        builder._name = schema.name
        builder._version = schema.version
        builder._doc = schema.doc
        if schema.parameters is not None:
            builder._parameters = dict(schema.parameters)
        if schema.type is Type.STRUCT:
            builder._fields = {f.name: f for f in schema.fields}
        if schema.type is Type.MAP:
            builder._key_schema = schema.key_schema
        if schema.type in (Type.MAP, Type.ARRAY):
            builder._value_schema = schema.value_schema
        return builder

    # -- attributes ---------------------------------------------------------------------

    def optional(self) -> SchemaBuilder:
        """Allow ``None`` as a value."""
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        """Disallow ``None`` (the default)."""
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        """The value of an unset struct field; checked against the schema by ``build()``.
        A STRUCT schema's default is a ``Struct`` of the same schema without a default."""
        self._default_value = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        if not isinstance(version, int) or isinstance(version, bool):
            raise SchemaBuilderError(f"Schema version must be an int, not {version!r}.")
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        self._doc = doc
        return self

    def parameter(self, name: str, value: str) -> SchemaBuilder:
        """Add one string parameter (e.g. a Decimal's ``scale``)."""
        if not isinstance(name, str) or not isinstance(value, str):
            raise SchemaBuilderError(f"Schema parameters are strings; got {name!r}: {value!r}.")
        if self._parameters is None:
            self._parameters = {}
        self._parameters[name] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> SchemaBuilder:
        """Add several string parameters."""
        for name, value in parameters.items():
            self.parameter(name, value)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Append a field to a STRUCT schema; its index is its position."""
        if self._fields is None:
            raise SchemaBuilderError(f"Cannot create fields on type {self._type.value}.")
        if not isinstance(name, str) or not name:
            raise SchemaBuilderError(f"A field name must be a non-empty string, not {name!r}.")
        if name in self._fields:
            raise SchemaBuilderError(f"Cannot create field {name!r}: the name is already used.")
        self._fields[name] = Field(name, len(self._fields), _built(schema, f"field {name!r}"))
        return self

    def build(self) -> Schema:
        """The finished, immutable schema."""
        attributes: dict[str, Any] = {
            "optional": self._optional,
            "name": self._name,
            "version": self._version,
            "doc": self._doc,
            "parameters": self._parameters,
            "fields": tuple(self._fields.values()) if self._fields is not None else None,
            "key_schema": self._key_schema,
            "value_schema": self._value_schema,
        }
        schema = Schema(self._type, **attributes)
        if self._default_value is None:
            return schema
        try:
            validate_value(schema, self._default_value)
        except DataError as exc:
            raise SchemaBuilderError(f"Invalid default value: {exc}") from exc
        return Schema(self._type, default_value=self._default_value, **attributes)

    def __repr__(self) -> str:
        return f"SchemaBuilder({self._type.name}, name={self._name!r})"


def _built(schema: Schema | SchemaBuilder, what: str) -> Schema:
    if isinstance(schema, SchemaBuilder):
        return schema.build()
    if not isinstance(schema, Schema):
        raise SchemaBuilderError(f"The {what} must be a Schema or SchemaBuilder, not {schema!r}.")
    return schema
