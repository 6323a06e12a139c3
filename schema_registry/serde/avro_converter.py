"""``AvroConverter``: Confluent's ``io.confluent.connect.avro.AvroConverter`` for Ferry.

::

    value.converter=io.confluent.connect.avro.AvroConverter
    value.converter.schema.registry.url=http://127.0.0.1:8081

Connect data is mapped to Avro as Confluent's ``AvroData`` maps it (``avro_data``), the
schema registered under the subject the strategy names, and the value written as
magic byte 0, the schema id, then Avro binary; reading does the reverse with the
writer's schema. Bytes are interchangeable with Confluent's AvroConverter and with the
Avro serializers of Confluent's clients. Keys: see ``converter_config``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from connect.api.config import AbstractConfig, ConfigDef
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import DataError
from schema_registry.serde.avro_data import AvroData, AvroReadSchema, AvroWriteSchema, encode
from schema_registry.serde.avro_names import NAMED_TYPES
from schema_registry.serde.client import SchemaText
from schema_registry.serde.converter_base import RegistryConverter
from schema_registry.serde.converter_config import AVRO_CONVERTER_CONFIG, avro_data_config

__all__ = ["AvroConverter", "avro_record_name"]


def avro_record_name(text: str) -> str | None:
    """The name subject strategies use for an Avro schema text: a named type's full
    name, another type's name, None for a union."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind not in NAMED_TYPES:
        return kind if isinstance(kind, str) else None
    name, namespace = str(value.get("name", "")), value.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


class AvroConverter(RegistryConverter[AvroWriteSchema, AvroReadSchema]):
    """Connect data to and from Avro with Schema Registry; one instance per task."""

    CONFIG_DEF: ClassVar[ConfigDef] = AVRO_CONVERTER_CONFIG
    SCHEMA_TYPE: ClassVar[str] = "AVRO"
    FORMAT_NAME: ClassVar[str] = "Avro"

    def __init__(self) -> None:
        super().__init__()
        self._data = AvroData()

    def _configure_data(self, config: AbstractConfig) -> None:
        self._data = AvroData(avro_data_config(config))

    @property
    def avro_data(self) -> AvroData:
        """The Connect <-> Avro mapping this converter uses."""
        return self._data

    def _check_null(self, topic: str, schema: Schema | None) -> None:
        if schema is not None and not schema.optional:
            raise DataError(f"Found null value for non-optional schema {schema!r} "
                            f"(topic {topic})")

    def _record_name(self, text: str) -> str | None:
        return avro_record_name(text)

    def _writer(self, schema: Schema | None) -> AvroWriteSchema:
        return self._data.writer(schema)

    def _parse_registered(self, schema: SchemaText) -> Any:
        return self._data.fastavro_schema(
            schema.schema, [r.schema.schema for r in self.referenced(schema)])

    def _encode(self, written: AvroWriteSchema, registered: Any, value: Any,
                schema: Schema | None) -> bytes:
        if registered is None:
            return written.write(value)
        return encode(registered, written.to_datum, value, schema)

    def _reader(self, schema: SchemaText, version: int | None) -> AvroReadSchema:
        references = [r.schema.schema for r in self.referenced(schema)]
        return self._data.reader(schema.schema, references, version=version)

    def _decode(self, reader: AvroReadSchema, payload: bytes | memoryview) -> SchemaAndValue:
        return SchemaAndValue(reader.schema, reader.read(payload))
