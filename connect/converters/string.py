"""StringConverter: keys, values and headers as text in a configurable charset.

Kafka's ``org.apache.kafka.connect.storage.StringConverter``: writing ignores the schema
and turns a non-string value into Kafka's ``Values`` text (Kafka calls Java's
``toString()``, which gives the same text for strings, numbers and booleans;
containers, structs, bytes and dates get the ``Values`` form, which Ferry can read back);
reading always gives an optional STRING. As with Java strings, unencodable characters
become ``?`` and undecodable bytes U+FFFD, never an error.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.config import AbstractConfig, ConfigDef, ConfigType, Importance, Width
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import ConfigError
from connect.api.storage import RawHeaders
from connect.converters.base import (
    HeaderCapableConverter,
    converter_config_def,
    converter_type,
    with_converter_type,
)
from connect.converters.values import convert_to_string

__all__ = ["StringConverter", "StringConverterConfig"]

ENCODING_CONFIG = "converter.encoding"
_BOM_UTF16_BE = codecs.BOM_UTF16_BE


class StringConverterConfig(AbstractConfig):
    """StringConverter's keys: ``converter.type`` and ``converter.encoding``."""

    CONFIG_DEF = converter_config_def().define(
        ENCODING_CONFIG,
        ConfigType.STRING,
        default="UTF-8",
        importance=Importance.HIGH,
        documentation="The name of the Java character set to use for encoding strings as "
        "byte arrays.",
        width=Width.MEDIUM,
        display_name="Encoding",
    )

    def __init__(self, props: Mapping[str, Any]) -> None:
        super().__init__(self.CONFIG_DEF, props)

    @property
    def encoding(self) -> str:
        return str(self.get_string(ENCODING_CONFIG))


class StringConverter(HeaderCapableConverter):
    """Kafka's StringConverter; see the module docstring. One instance per task."""

    def __init__(self) -> None:
        self._encode, self._decode = _charset("UTF-8")

    def config(self) -> ConfigDef:
        return StringConverterConfig.CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        config = StringConverterConfig(
            with_converter_type(configs, converter_type(configs, is_key))
        )
        self._encode, self._decode = _charset(config.encoding)

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if value is None:
            return None
        text = value if isinstance(value, str) else convert_to_string(schema, value)
        return self._encode(str(text))

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        text = None if value is None else self._decode(bytes(value))
        return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, text)


def _charset(name: str) -> tuple[Callable[[str], bytes], Callable[[bytes], str]]:
    """Encode and decode functions that behave as Java's charset ``name`` does."""
    key = name.strip().upper()
    # Java's UTF-16 writes a big-endian BOM and reads big-endian unless a BOM says
    # otherwise; UTF-32 writes big-endian without a BOM. Python's codecs of those names
    # use the machine's byte order instead.
    if key in ("UTF-16", "UTF16"):
        return (
            lambda text: _BOM_UTF16_BE + text.encode("utf-16-be", "replace"),
            lambda data: data.decode(
                "utf-16" if data[:2] in (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE) else "utf-16-be",
                "replace",
            ),
        )
    if key in ("UTF-32", "UTF32"):
        return (
            lambda text: text.encode("utf-32-be", "replace"),
            lambda data: data.decode(
                "utf-32" if data[:4] in (codecs.BOM_UTF32_BE, codecs.BOM_UTF32_LE) else "utf-32-be",
                "replace",
            ),
        )
    try:
        codec = codecs.lookup(key)
    except LookupError:
        raise ConfigError(
            ENCODING_CONFIG, "Unknown character set; use e.g. UTF-8 or ISO-8859-1", value=name
        ) from None
    return (lambda text: codec.encode(text, "replace")[0]), (
        lambda data: codec.decode(data, "replace")[0]
    )
