"""InsertHeader: add a header with a literal value to every record (Kafka's
``InsertHeader``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, NonNullValidator
from connect.api.data import Schema
from connect.transforms.base import BuiltinTransformation, R

__all__ = ["InsertHeader"]

HEADER = "header"
VALUE_LITERAL = "value.literal"

_CONFIG_DEF = (
    ConfigDef()
    .define(
        HEADER,
        ConfigType.STRING,
        validator=NonNullValidator(),
        importance=Importance.HIGH,
        documentation="The name of the header.",
    )
    .define(
        VALUE_LITERAL,
        ConfigType.STRING,
        validator=NonNullValidator(),
        importance=Importance.HIGH,
        documentation="The value of the header, as a string.",
    )
)


class InsertHeader(BuiltinTransformation):
    """Appends the header to each record's headers (earlier headers of the same name
    stay). The value always has a STRING schema: Kafka infers a type from the literal
    (``42`` becomes an INT8), which makes no difference once a header converter has
    written it as text, but does to a transformation that reads the header later."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._header = ""
        self._literal = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._header = parsed[HEADER]
        self._literal = parsed[VALUE_LITERAL]

    def apply(self, record: R) -> R:
        headers = record.headers.duplicate().add(self._header, self._literal, Schema.STRING_SCHEMA)
        return record.new_record(headers=headers)
