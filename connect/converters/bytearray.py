"""ByteArrayConverter: keys, values and headers passed through as raw bytes.

Kafka's ``org.apache.kafka.connect.converters.ByteArrayConverter``: writing accepts
``bytes``, ``bytearray`` or ``memoryview`` with a BYTES schema or none; reading gives an
optional BYTES schema and the bytes as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef
from connect.api.data import Schema, SchemaAndValue, Type
from connect.api.errors import DataError
from connect.api.storage import RawHeaders
from connect.converters.base import HeaderCapableConverter, converter_config_def

__all__ = ["ByteArrayConverter"]


class ByteArrayConverter(HeaderCapableConverter):
    """Kafka's ByteArrayConverter; stateless, so any thread may use it."""

    _CONFIG_DEF = converter_config_def()

    def config(self) -> ConfigDef:
        return self._CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Nothing to configure (Kafka reads no keys either)."""

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None:
            return None
        if isinstance(value, bytes):
            return value
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        raise DataError(
            f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}"
        )

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, value)
