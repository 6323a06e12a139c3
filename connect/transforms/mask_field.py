"""MaskField: replace fields with a null-equivalent or a configured replacement (Kafka's
``MaskField$Key`` and ``MaskField$Value``)."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from connect.api.data import Field, Schema, Struct
from connect.api.errors import DataError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.requirements import require_map, require_struct, type_name
from connect.transforms.schema_util import SchemaCache
from connect.transforms.validators import NON_EMPTY_LIST

__all__ = ["MaskField", "MaskFieldKey", "MaskFieldValue"]

FIELDS = "fields"
REPLACEMENT = "replacement"
_PURPOSE = "mask fields"

_CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELDS,
        ConfigType.LIST,
        validator=NON_EMPTY_LIST,
        importance=Importance.HIGH,
        documentation="Names of fields to mask.",
    )
    .define(
        REPLACEMENT,
        ConfigType.STRING,
        default=None,
        validator=NonEmptyString(),
        importance=Importance.LOW,
        documentation="Replacement for every masked value, converted to the field's type "
        "(numeric or non-empty string fields only). Without it, values are replaced by "
        "their type's null-equivalent: 0, false, empty string, empty list or map, the epoch.",
    )
)
define_replace_null_with_default(_CONFIG_DEF)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _null_equivalent(value: Any) -> Any:
    # The order matters: bool is an int, and datetime is a date.
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, str):
        return ""
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, dt.datetime):
        return _EPOCH
    if isinstance(value, dt.date):
        return dt.date(1970, 1, 1)
    if isinstance(value, dt.time):
        return dt.time(0)
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    raise DataError(f"Cannot mask value of type: {type_name(value)}")


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _to_int(text: str) -> int:
    # Kafka reads the replacement with Values.convertTo*: "12.5" masks an int as 12.
    text = text.strip()
    if _JAVA_INTEGER.fullmatch(text):
        return int(text)
    return int(_to_decimal(text))


def _to_float(text: str) -> float:
    text = text.strip()
    if text in ("NaN", "Infinity", "-Infinity", "+Infinity"):
        return float(text.replace("Infinity", "inf"))
    return float(_to_decimal(text))


def _to_decimal(text: str) -> decimal.Decimal:
    # Java's BigDecimal(String): no whitespace, underscores, NaN or infinities.
    if not _JAVA_DECIMAL.fullmatch(text):
        raise ValueError(text)
    return decimal.Decimal(text)


def _replacement_for(value: Any) -> Callable[[str], Any] | None:
    """How the replacement string becomes a value of ``value``'s type (None: it cannot)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _to_int
    if isinstance(value, float):
        return _to_float
    if isinstance(value, str):
        return str
    if isinstance(value, decimal.Decimal):
        return _to_decimal
    return None


class MaskField(SidedTransformation):
    """Mask fields of a struct or map. Values are replaced by their type's
    null-equivalent, or by ``replacement`` parsed to the field's type; other fields are
    copied. Null fields stay null; a null key or value passes through unchanged (Kafka
    would raise for it). Types without a null-equivalent (bytes, structs) are a
    ``DataError``."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._fields: tuple[str, ...] = ()
        self._field_set: frozenset[str] = frozenset()
        self._replacement: str | None = None
        self._with_default = True
        # Per input schema: the fields to mask.
        self._masked_fields: SchemaCache[tuple[Field, ...]] = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        # A tuple keeps the configured order for fields added to schemaless maps.
        self._fields = tuple(dict.fromkeys(parsed[FIELDS]))
        self._field_set = frozenset(self._fields)
        self._replacement = parsed[REPLACEMENT]
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._masked_fields = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            original = require_map(value, _PURPOSE)
            updated = dict(original)
            for name in self._fields:
                updated[name] = self._masked(original.get(name))
            return self.updated_record(record, None, updated)
        struct = require_struct(value, _PURPOSE)
        values = struct.values(with_defaults=self._with_default)
        masked = self._masked_fields.get_or_build(struct.schema, self._fields_to_mask)
        for field in masked:
            values[field.index] = self._masked(values[field.index])
        # Unmasked values are valid already; masked ones are checked.
        result = Struct.from_values(struct.schema, values, validate=False)
        for field in masked:
            result.put(field, values[field.index])
        return self.updated_record(record, schema, result)

    def _fields_to_mask(self, schema: Schema) -> tuple[Field, ...]:
        return tuple(f for f in schema.fields if f.name in self._field_set)

    def _masked(self, value: Any) -> Any:
        if value is None:
            return None
        if self._replacement is None:
            return _null_equivalent(value)
        convert = _replacement_for(value)
        if convert is None:
            raise DataError(
                f"Cannot mask value of type {type_name(value)} with custom replacement."
            )
        try:
            return convert(self._replacement)
        except (ValueError, ArithmeticError, DataError):
            raise DataError(
                f"Unable to convert {self._replacement} (str) to {type_name(value)}"
            ) from None


class MaskFieldKey(KeySide, MaskField):
    """MaskField on the record key (Kafka's ``MaskField$Key``)."""


class MaskFieldValue(ValueSide, MaskField):
    """MaskField on the record value (Kafka's ``MaskField$Value``)."""
