"""Struct values and ``validate_value``: checking Python values against Connect schemas.

The Python type each schema type accepts (Kafka's ``ConnectSchema.validateValue``):

==============  ================================================================
INT8..INT64     ``int`` (not ``bool``) within the type's range
FLOAT32/64      ``float`` (FLOAT32: within float32's range; inf and nan allowed)
BOOLEAN         ``bool``
STRING          ``str``
BYTES           ``bytes``, ``bytearray`` or ``memoryview``
ARRAY           ``list``, each element valid for the value schema
MAP             ``dict``, each key and value valid for the key and value schemas
STRUCT          ``Struct`` of an equal schema (defaults aside), every required field set
Decimal         ``decimal.Decimal``, finite, exactly representable at the ``scale``
Date            ``datetime.date`` (not ``datetime.datetime``)
Time            ``datetime.time``, naive or UTC
Timestamp       ``datetime.datetime``; naive values are read as UTC
==============  ================================================================

Struct and validation live together because each needs the other: ``Struct.put`` checks
values, and a struct value is checked by validating the struct.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from connect.api.data import logical_values as lv
from connect.api.data.schema import Field, Schema, Type
from connect.api.errors import DataError

__all__ = ["Struct", "validate_value"]

_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_FLOAT32_MAX = 3.4028234663852886e38
_PRIMITIVE_CLASSES: dict[Type, type | tuple[type, ...]] = {
    Type.FLOAT32: float,
    Type.FLOAT64: float,
    Type.BOOLEAN: bool,
    Type.STRING: str,
    Type.BYTES: (bytes, bytearray, memoryview),
    Type.ARRAY: list,
    Type.MAP: dict,
}


def validate_value(schema: Schema, value: Any, *, field: str | None = None) -> None:
    """Raise ``DataError`` unless ``value`` is valid for ``schema``.

    ``None`` is valid only for optional schemas (a default value is not substituted here).
    The message names the path of the bad value, e.g. ``field "order.items[2].price"``;
    ``field`` is the name of the value being checked, for that path.
    """
    _validate(schema, value, field or "")


def _where(path: str) -> str:
    return f'field "{path}"' if path else "value"


def _validate(schema: Schema, value: Any, path: str) -> None:
    if value is None:
        if not schema.optional:
            raise DataError(
                f"Invalid value: None used for required {_where(path)}, "
                f"schema type: {schema.type.value}"
            )
        return
    logical_check = _LOGICAL_CHECKS.get(schema.name) if schema.name is not None else None
    if logical_check is not None:
        try:
            logical_check(schema, value)
        except DataError as exc:
            raise DataError(f"Invalid value for {_where(path)}: {exc}") from None
        return
    type_ = schema.type
    if type_ in _INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            _wrong_class(schema, value, path)
        low, high = _INT_RANGES[type_]
        if not low <= value <= high:
            raise DataError(
                f"Invalid value for {_where(path)}: {value} is out of range for "
                f"{type_.value} ({low}..{high})"
            )
        return
    if type_ is Type.STRUCT:
        if not isinstance(value, Struct):
            _wrong_class(schema, value, path)
        if not value.schema.equals_ignoring_default(schema):
            raise DataError(
                f"Invalid value for {_where(path)}: Struct schemas do not match "
                f"(expected {schema!r}, got {value.schema!r})"
            )
        value._validate(path)
        return
    if not isinstance(value, _PRIMITIVE_CLASSES[type_]):
        _wrong_class(schema, value, path)
    if type_ is Type.FLOAT32 and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
        raise DataError(f"Invalid value for {_where(path)}: {value} overflows float32")
    if type_ is Type.ARRAY:
        element_schema = schema.value_schema
        for index, element in enumerate(value):
            _validate(element_schema, element, f"{path}[{index}]")
    elif type_ is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        for key, item in value.items():
            _validate(key_schema, key, f"{path}{{key {key!r}}}")
            _validate(value_schema, item, f"{path}[{key!r}]")


def _wrong_class(schema: Schema, value: Any, path: str) -> None:
    expected = _PRIMITIVE_CLASSES.get(schema.type, Struct if schema.type is Type.STRUCT else int)
    names = (
        " or ".join(c.__name__ for c in expected)
        if isinstance(expected, tuple)
        else expected.__name__
    )
    raise DataError(
        f"Invalid value for {_where(path)}: {schema.type.value} schema expects {names}, "
        f"got {type(value).__name__}"
    )


def _check_decimal(schema: Schema, value: Any) -> None:
    lv.unscaled_decimal(value, lv.decimal_scale(schema.parameters))


def _check_date(schema: Schema, value: Any) -> None:
    lv.date_to_days(value)


def _check_time(schema: Schema, value: Any) -> None:
    lv.time_to_millis(value)


def _check_timestamp(schema: Schema, value: Any) -> None:
    lv.timestamp_to_millis(value)


_LOGICAL_CHECKS: dict[str, Callable[[Schema, Any], None]] = {
    lv.DECIMAL_LOGICAL_NAME: _check_decimal,
    lv.DATE_LOGICAL_NAME: _check_date,
    lv.TIME_LOGICAL_NAME: _check_time,
    lv.TIMESTAMP_LOGICAL_NAME: _check_timestamp,
}


#: Fast predicates: ``check(value)`` True means valid; False means "run ``_validate``",
#: which raises with a message or accepts what the predicate was too strict for (an
#: ``int`` subclass, a logical value). Compiled once per schema, kept on the schema.
_Check = Callable[[Any], bool]


def _check_for(schema: Schema) -> _Check:
    check = schema._check
    if check is None:
        check = _compile(schema)
        object.__setattr__(schema, "_check", check)
    return check


def _never(value: Any) -> bool:
    return False


def _compile(schema: Schema) -> _Check:
    inner = _compile_present(schema)
    if schema.optional:
        return lambda v: v is None or inner(v)
    return inner


def _compile_present(schema: Schema) -> _Check:
    """The predicate for a value that is not None."""
    if schema.name is not None and schema.name in _LOGICAL_CHECKS:
        return _never  # logical values take the full check
    type_ = schema.type
    if type_ in _INT_RANGES:
        low, high = _INT_RANGES[type_]
        return lambda v: type(v) is int and low <= v <= high
    if type_ is Type.FLOAT64:
        return lambda v: type(v) is float
    if type_ is Type.FLOAT32:
        return lambda v: type(v) is float and -_FLOAT32_MAX <= v <= _FLOAT32_MAX
    if type_ is Type.STRING:
        return lambda v: type(v) is str
    if type_ is Type.BOOLEAN:
        return lambda v: v is True or v is False
    if type_ is Type.BYTES:
        return lambda v: type(v) is bytes
    if type_ is Type.ARRAY:
        element = _check_for(schema.value_schema)
        return lambda v: type(v) is list and all(map(element, v))
    if type_ is Type.MAP:
        key, item = _check_for(schema.key_schema), _check_for(schema.value_schema)
        return lambda v: (type(v) is dict and all(map(key, v))
                          and all(map(item, v.values())))
    fields = tuple((f.index, _check_for(f.schema), f.schema.default_value is not None)
                   for f in schema.fields)

    def struct_check(v: Any) -> bool:
        if type(v) is not Struct or not (
            v._schema is schema or v._schema.equals_ignoring_default(schema)
        ):
            return False
        values = v._values
        for index, check, has_default in fields:
            value = values[index]
            if not check(value) and not (value is None and has_default):
                return False
        return True

    return struct_check


class Struct:
    """A record-like value bound to a STRUCT schema; every ``put`` is validated.

    ``get`` returns a field's value or, when unset, its schema's default;
    ``get_without_default`` returns what was put. ``validate()`` checks that every
    required field without a default has a value; converters call it before serializing.
    Structs are mutable (hence unhashable) and not thread-safe: fill one, then hand it on.
    """

    __slots__ = ("_schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if not isinstance(schema, Schema) or schema.type is not Type.STRUCT:
            raise DataError(f"Struct needs a STRUCT schema, got {schema!r}")
        self._schema = schema
        self._values: list[Any] = [None] * len(schema._fields)

    @property
    def schema(self) -> Schema:
        return self._schema

    @classmethod
    def from_values(cls, schema: Schema, values: Sequence[Any], *,
                    validate: bool = True) -> Struct:
        """A struct holding one value per field of ``schema``, in field order.

        With ``validate`` each value is checked as ``put`` checks it. ``validate=False``
        trusts the caller: it is for code that copies values between structs whose
        field schemas are equal (transformations do, per record), and a wrong value
        then surfaces only when the struct is validated or serialized.
        """
        if type(schema) is not Schema or schema._type is not Type.STRUCT:
            raise DataError(f"Struct needs a STRUCT schema, got {schema!r}")
        fields = schema._fields
        if len(values) != len(fields):
            raise DataError(f"{len(values)} values given for a struct of "
                            f"{len(fields)} fields")
        if validate:
            for f, value in zip(fields, values, strict=True):
                if not _check_for(f.schema)(value):
                    validate_value(f.schema, value, field=f.name)
        struct = object.__new__(cls)
        struct._schema = schema
        struct._values = list(values)
        return struct

    @classmethod
    def owning(cls, schema: Schema, values: list[Any]) -> Struct:
        """A struct that takes ``values`` as its own list: not copied, not counted, not
        checked.

        For generated code that builds a new list of exactly one trusted value per
        field for each struct of a STRUCT schema it built itself (a CDC connector's
        row, key, source block and envelope): ``from_values(..., validate=False)``'s
        checks and copy cost three times the struct (0.29 against 0.09 us). Anything
        else should call ``from_values``.
        """
        struct = object.__new__(cls)
        struct._schema = schema
        struct._values = values
        return struct

    @classmethod
    def from_rows(cls, schema: Schema, rows: Iterable[Sequence[Any]]) -> list[Struct]:
        """One struct per row of values, as ``from_values(schema, row, validate=False)``
        makes it (the values are trusted, their number is checked).

        For sources that turn a batch of rows into structs: one call per batch instead
        of one per row, which was almost half of a row's struct (0.18 against 0.32 us,
        ``bench/jdbc_throughput.py --source-breakdown``)."""
        if type(schema) is not Schema or schema._type is not Type.STRUCT:
            raise DataError(f"Struct needs a STRUCT schema, got {schema!r}")
        width = len(schema._fields)
        new = object.__new__
        out: list[Struct] = []
        append = out.append
        for values in rows:
            if len(values) != width:
                raise DataError(f"{len(values)} values given for a struct of "
                                f"{width} fields")
            struct = new(cls)
            struct._schema = schema
            struct._values = list(values)
            append(struct)
        return out

    def put(self, field: str | Field, value: Any) -> Struct:
        """Set a field (by name or ``Field``) after validating the value; returns self."""
        resolved = (self._schema._field_by_name.get(field) if type(field) is str
                    else None) or self._lookup(field)
        schema = resolved.schema
        if not (schema._check or _check_for(schema))(value):
            validate_value(schema, value, field=resolved.name)
        self._values[resolved.index] = value
        return self

    def get(self, field: str | Field) -> Any:
        """The field's value, or its schema's default value when the field is unset."""
        resolved = (self._schema._field_by_name.get(field) if type(field) is str
                    else None) or self._lookup(field)
        value = self._values[resolved.index]
        return resolved.schema.default_value if value is None else value

    def values(self, *, with_defaults: bool = False) -> list[Any]:
        """Every field's value in field order (a new list); unset fields are None, or with
        ``with_defaults`` their schema's default."""
        if not with_defaults or not self._schema._field_defaults:
            return self._values.copy()
        return [f.schema.default_value if v is None else v
                for f, v in zip(self._schema._fields, self._values, strict=True)]

    def get_without_default(self, field: str | Field) -> Any:
        """The field's value as put, None when unset (defaults are not applied)."""
        return self._values[self._lookup(field).index]

    def validate(self) -> None:
        """Raise ``DataError`` naming the first required field that has no value."""
        self._validate("")

    def _validate(self, path: str) -> None:
        if _check_for(self._schema)(self):
            return
        for f in self._schema.fields:
            value = self._values[f.index]
            if value is None and (f.schema.optional or f.schema.default_value is not None):
                continue
            _validate(f.schema, value, f"{path}.{f.name}" if path else f.name)

    def _lookup(self, field: str | Field) -> Field:
        if isinstance(field, Field):
            own = self._schema.field(field.name)
            if own is not field and own != field:
                raise DataError(f"{field!r} is not a field of this struct's schema")
            return field
        resolved = self._schema.field(field)
        if resolved is None:
            names = ", ".join(f.name for f in self._schema.fields)
            raise DataError(f"{field!r} is not a valid field name; the fields are: {names}")
        return resolved

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self._schema == other._schema and self._values == other._values

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        items = ", ".join(f"{f.name}={self._values[f.index]!r}" for f in self._schema.fields)
        return f"Struct({items})"
