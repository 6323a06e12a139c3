"""Short, Integer, Long, Float and Double converters: one number, big-endian.

Kafka's ``org.apache.kafka.connect.converters.*Converter`` (KIP-305), which write with
Kafka's ``ShortSerializer``... ``DoubleSerializer``: two's complement integers of 2, 4
and 8 bytes and IEEE-754 floats of 4 and 8 bytes, big-endian; None is a null record
(a tombstone). Reading checks the size and always gives the type's optional schema.
The schema given for writing is not consulted, as in Kafka.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, ClassVar

from connect.api.config import ConfigDef
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import DataError
from connect.api.storage import RawHeaders
from connect.converters.base import HeaderCapableConverter, converter_config_def, converter_type

__all__ = [
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "LongConverter",
    "ShortConverter",
]


class _NumberConverter(HeaderCapableConverter):
    """Kafka's ``NumberConverter``: the subclasses set the type's name (as Kafka's
    messages spell it), its optional schema and its wire format."""

    TYPE_NAME: ClassVar[str]
    SCHEMA: ClassVar[Schema]
    FORMAT: ClassVar[struct.Struct]
    _CONFIG_DEF = converter_config_def()

    def config(self) -> ConfigDef:
        return self._CONFIG_DEF

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Only ``converter.type`` is read, and only to be checked."""
        converter_type(configs, is_key)

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if not self._accepts(value):
            raise DataError(f"Failed to serialize to {self.TYPE_NAME} (was {type(value).__name__})")
        try:
            return self.FORMAT.pack(value)
        except (struct.error, OverflowError) as exc:
            raise DataError(f"Failed to serialize to {self.TYPE_NAME}: {value!r} ({exc})") from None

    def to_connect_data(
        self, topic: str, value: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(self.SCHEMA, None)
        if len(value) != self.FORMAT.size:
            raise DataError(
                f"Failed to deserialize {self.TYPE_NAME}: size of data received is "
                f"{len(value)} bytes, not {self.FORMAT.size}"
            )
        return SchemaAndValue(self.SCHEMA, self.FORMAT.unpack(value)[0])


class ShortConverter(_NumberConverter):
    """INT16 as 2 bytes."""

    TYPE_NAME = "short"
    SCHEMA = Schema.OPTIONAL_INT16_SCHEMA
    FORMAT = struct.Struct(">h")


class IntegerConverter(_NumberConverter):
    """INT32 as 4 bytes."""

    TYPE_NAME = "integer"
    SCHEMA = Schema.OPTIONAL_INT32_SCHEMA
    FORMAT = struct.Struct(">i")


class LongConverter(_NumberConverter):
    """INT64 as 8 bytes."""

    TYPE_NAME = "long"
    SCHEMA = Schema.OPTIONAL_INT64_SCHEMA
    FORMAT = struct.Struct(">q")


class FloatConverter(_NumberConverter):
    """FLOAT32 as 4 bytes; a float beyond float32's range is a DataError."""

    TYPE_NAME = "float"
    SCHEMA = Schema.OPTIONAL_FLOAT32_SCHEMA
    FORMAT = struct.Struct(">f")

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, float)


class DoubleConverter(_NumberConverter):
    """FLOAT64 as 8 bytes."""

    TYPE_NAME = "double"
    SCHEMA = Schema.OPTIONAL_FLOAT64_SCHEMA
    FORMAT = struct.Struct(">d")

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, float)
