"""BooleanConverter: one boolean as one byte, 0x01 for true and 0x00 for false.

Kafka's ``org.apache.kafka.connect.converters.BooleanConverter`` (KIP-959, Kafka 3.7),
with Kafka's ``BooleanSerializer`` format. Reading gives an optional BOOLEAN schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef
from connect.api.data import Schema, SchemaAndValue, Type
from connect.api.errors import DataError
from connect.api.storage import RawHeaders
from connect.converters.base import HeaderCapableConverter, converter_config_def, converter_type

__all__ = ["BooleanConverter"]

_TRUE, _FALSE = b"\x01", b"\x00"


class BooleanConverter(HeaderCapableConverter):
    """Kafka's BooleanConverter; stateless, so any thread may use it."""

    _CONFIG_DEF = converter_config_def()

    def config(self) -> ConfigDef:
        return self._CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Only ``converter.type`` is read, and only to be checked."""
        converter_type(configs, is_key)

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataError(f"Invalid schema type for BooleanConverter: {schema.type.name}")
        if value is None:
            return None
        if value is True:
            return _TRUE
        if value is False:
            return _FALSE
        raise DataError(
            f"BooleanConverter is not compatible with objects of type {type(value).__name__}"
        )

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(value) != 1:
            raise DataError(
                f"Failed to deserialize boolean: size of data received is {len(value)} bytes, not 1"
            )
        if value == _TRUE:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, True)
        if value == _FALSE:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, False)
        raise DataError(f"Failed to deserialize boolean: unexpected byte {value[0]:#04x}")
