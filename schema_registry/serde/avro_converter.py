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
from connect.api.storage import RawHeaders
from schema_registry.serde.avro_data import AvroData, AvroReadSchema, AvroWriteSchema, encode
from schema_registry.serde.avro_names import NAMED_TYPES
from schema_registry.serde.client import SchemaText
from schema_registry.serde.converter_base import RegistryConverter
from schema_registry.serde.converter_config import AVRO_CONVERTER_CONFIG, avro_data_config
from schema_registry.serde.wire import frame, unframe

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


class AvroConverter(RegistryConverter):
    """Connect data to and from Avro with Schema Registry; one instance per task."""

    CONFIG_DEF: ClassVar[ConfigDef] = AVRO_CONVERTER_CONFIG
    SCHEMA_TYPE: ClassVar[str] = "AVRO"

    def __init__(self) -> None:
        super().__init__()
        self._data = AvroData()
        # (topic, Connect schema) -> (writer, schema id, registry's schema or None); the
        # schema used last is kept apart, as a task converts long runs of one schema
        self._written: dict[tuple[str, Schema | None], tuple[AvroWriteSchema, int, Any]] = {}
        self._last: tuple[str, Schema | None, tuple[AvroWriteSchema, int, Any]] | None = None

    def _configure_data(self, config: AbstractConfig) -> None:
        self._data = AvroData(avro_data_config(config))
        self._written = {}
        self._last = None

    @property
    def avro_data(self) -> AvroData:
        """The Connect <-> Avro mapping this converter uses."""
        return self._data

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: RawHeaders | None = None) -> bytes | None:
        if value is None:
            if schema is not None and not schema.optional:
                raise DataError(f"Found null value for non-optional schema {schema!r} "
                                f"(topic {topic})")
            return None
        with self.translated(topic, writing=True):
            last = self._last
            if last is not None and last[0] == topic and last[1] is schema:
                entry = last[2]
            else:
                entry = self._entry(topic, schema)
                self._last = (topic, schema, entry)
            written, schema_id, registry_parsed = entry
            if registry_parsed is None:
                payload = written.write(value)
            else:
                payload = encode(registry_parsed, written.to_datum, value, schema)
            return frame(schema_id, payload)
        raise AssertionError("unreachable")  # pragma: no cover

    def _entry(self, topic: str, schema: Schema | None) -> tuple[AvroWriteSchema, int, Any]:
        key = (topic, schema)
        entry = self._written.get(key)
        if entry is not None:
            return entry
        written = self._data.writer(schema)
        subject = self.strategy.subject_name(topic, self._is_key, written.record_name)
        schema_id, registry_schema = self.schema_id(subject, SchemaText(written.text))
        parsed = None
        if registry_schema is not None:
            parsed = self._data.fastavro_schema(
                registry_schema.schema,
                [r.schema.schema for r in self.referenced(registry_schema)])
        entry = (written, schema_id, parsed)
        if len(self._written) >= 1000:
            self._written.clear()
        self._written[key] = entry
        return entry

    def to_connect_data(self, topic: str, value: bytes | None,
                        headers: RawHeaders | None = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        with self.translated(topic, writing=False):
            schema_id, payload = unframe(value)
            reader = self._read_cache.get((topic, schema_id))
            if reader is None:
                reader = self._reader(topic, schema_id)
                self._read_cache.put((topic, schema_id), reader)
            return SchemaAndValue(reader.schema, reader.read(payload))
        raise AssertionError("unreachable")  # pragma: no cover

    def _reader(self, topic: str, schema_id: int) -> AvroReadSchema:
        schema = self.client.get_schema(schema_id)
        if schema.schema_type != "AVRO":
            raise DataError(f"Schema {schema_id} is a {schema.schema_type} schema, not Avro: "
                            "configure the converter matching the topic's data")
        references = [r.schema.schema for r in self.referenced(schema)]
        subject = self.strategy.subject_name(topic, self._is_key,
                                             avro_record_name(schema.schema))
        version = self.version_of(subject, schema)
        return self._data.reader(schema.schema, references, version=version)
