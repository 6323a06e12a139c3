"""SimpleHeaderConverter: Kafka's default header converter, header values as text.

Kafka's ``org.apache.kafka.connect.storage.SimpleHeaderConverter``: a value is written
as the UTF-8 of its ``Values`` text (``values.convert_to_string``: strings as they are,
numbers, booleans, ``[a,b]`` arrays, ``{k:v}`` maps and structs, base64 bytes, ISO-8601
temporal values) and no schema is written; reading infers the schema from the text
(``values_parser``: null, booleans, the smallest fitting integer type, float32/float64,
Decimal, Date/Time/Timestamp, arrays and maps, else STRING). Text that cannot be read
at all comes back as BYTES, as in Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import DataError
from connect.api.storage import HeaderConverter
from connect.converters.base import plugin_version
from connect.converters.values import convert_to_string, parse_string

__all__ = ["SimpleHeaderConverter"]

log = logging.getLogger(__name__)


class SimpleHeaderConverter(HeaderConverter):
    """Kafka's SimpleHeaderConverter; stateless, so any thread may use it. It has no
    config keys, and reads none."""

    _CONFIG_DEF = ConfigDef()

    def config(self) -> ConfigDef:
        return self._CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def version(self) -> str:
        return plugin_version()

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        text = convert_to_string(schema, value)
        # Java's getBytes(UTF_8) writes a lone surrogate as "?"; so does "replace".
        return None if text is None else text.encode("utf-8", "replace")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        text = bytes(value).decode("utf-8", "replace")
        try:
            return parse_string(text)
        except (DataError, ArithmeticError, ValueError) as exc:
            log.warning(
                "Failed to deserialize value for header %r on topic %r, so using byte array: %s",
                header_key,
                topic,
                exc,
            )
            return SchemaAndValue(Schema.BYTES_SCHEMA, bytes(value))
