"""``JsonSchemaConverter``: Confluent's ``io.confluent.connect.json.JsonSchemaConverter``.

::

    value.converter=io.confluent.connect.json.JsonSchemaConverter
    value.converter.schema.registry.url=http://127.0.0.1:8081

Connect data is mapped to JSON Schema as Confluent's ``JsonSchemaData`` maps it
(``json_from_connect``), the schema registered under the subject the strategy names
(the record name is the schema's ``title``), and the value written as magic byte 0, the
schema id, then UTF-8 JSON. With ``json.fail.invalid.schema`` every document is
validated against its schema, in both directions. A null value is written as a null
record (a tombstone), where Confluent's converter writes the JSON text ``null`` for an
optional schema. Keys: see ``converter_config``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from connect.api.config import AbstractConfig, ConfigDef
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import DataError
from connect.api.storage import RawHeaders
from schema_registry.schemas import Reference
from schema_registry.serde.client import SchemaText
from schema_registry.serde.converter_base import RegistryConverter
from schema_registry.serde.converter_config import (
    JSON_SCHEMA_CONVERTER_CONFIG,
    json_schema_data_config,
)
from schema_registry.serde.json_schema_data import (
    JsonReadSchema,
    JsonSchemaData,
    JsonWriteSchema,
    encode_document,
    parse_json_schema,
    validate_document,
)
from schema_registry.serde.wire import frame, unframe

__all__ = ["JsonSchemaConverter", "json_record_name"]


def json_record_name(text: str) -> str | None:
    """The name subject strategies use for a JSON schema: its ``title``."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    title = value.get("title") if isinstance(value, dict) else None
    return title if isinstance(title, str) else None


class JsonSchemaConverter(RegistryConverter):
    """Connect data to and from JSON with JSON Schema and Schema Registry; one instance
    per task."""

    CONFIG_DEF: ClassVar[ConfigDef] = JSON_SCHEMA_CONVERTER_CONFIG
    SCHEMA_TYPE: ClassVar[str] = "JSON"

    def __init__(self) -> None:
        super().__init__()
        self._data = JsonSchemaData()
        self._validate = False
        # (topic, Connect schema) -> (writer, schema id, registry's parsed schema or None)
        self._written: dict[tuple[str, Schema], tuple[JsonWriteSchema, int, Any]] = {}

    def _configure_data(self, config: AbstractConfig) -> None:
        self._data = JsonSchemaData(json_schema_data_config(config))
        self._validate = bool(config.get_boolean("json.fail.invalid.schema"))
        self._written = {}

    @property
    def json_schema_data(self) -> JsonSchemaData:
        """The Connect <-> JSON Schema mapping this converter uses."""
        return self._data

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: RawHeaders | None = None) -> bytes | None:
        if value is None:
            return None
        if schema is None:
            raise DataError(
                f"JsonSchemaConverter needs a schema to write a value (topic {topic}); for "
                "schemaless values use org.apache.kafka.connect.json.JsonConverter with "
                "schemas.enable=false")
        with self.translated(topic, writing=True):
            written, schema_id, registry_parsed = self._entry(topic, schema)
            if registry_parsed is None:
                payload = written.write(value, validate=self._validate)
            else:
                document = written.to_json(value)
                if self._validate:
                    validate_document(registry_parsed, document)
                payload = encode_document(document)
            return frame(schema_id, payload)
        raise AssertionError("unreachable")  # pragma: no cover

    def _entry(self, topic: str, schema: Schema) -> tuple[JsonWriteSchema, int, Any]:
        key = (topic, schema)
        entry = self._written.get(key)
        if entry is not None:
            return entry
        written = self._data.writer(schema)
        subject = self.strategy.subject_name(topic, self._is_key, written.record_name)
        schema_id, registry_schema = self.schema_id(
            subject, SchemaText(written.text, self.SCHEMA_TYPE))
        parsed = None
        if registry_schema is not None:
            parsed = parse_json_schema(registry_schema.schema, registry_schema.references,
                                       self._resolve)
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
            converted = reader.read(payload, validate=self._validate)
            if converted is None:
                return SchemaAndValue.NULL
            return SchemaAndValue(reader.schema, converted)
        raise AssertionError("unreachable")  # pragma: no cover

    def _reader(self, topic: str, schema_id: int) -> JsonReadSchema:
        schema = self.client.get_schema(schema_id)
        if schema.schema_type != "JSON":
            raise DataError(f"Schema {schema_id} is a {schema.schema_type} schema, not a "
                            "JSON schema: configure the converter matching the topic's data")
        subject = self.strategy.subject_name(topic, self._is_key,
                                             json_record_name(schema.schema))
        version = self.version_of(subject, schema)
        return self._data.reader(schema.schema, schema.references, resolve=self._resolve,
                                 version=version)

    def _resolve(self, ref: Reference) -> tuple[str, str, tuple[Reference, ...]]:
        found = self.client.get_version(ref.subject, ref.version).schema
        return found.schema_type, found.schema, found.references
