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

__all__ = ["JsonSchemaConverter", "json_record_name"]


def json_record_name(text: str) -> str | None:
    """The name subject strategies use for a JSON schema: its ``title``."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    title = value.get("title") if isinstance(value, dict) else None
    return title if isinstance(title, str) else None


class JsonSchemaConverter(RegistryConverter[JsonWriteSchema, JsonReadSchema]):
    """Connect data to and from JSON with JSON Schema and Schema Registry; one instance
    per task."""

    CONFIG_DEF: ClassVar[ConfigDef] = JSON_SCHEMA_CONVERTER_CONFIG
    SCHEMA_TYPE: ClassVar[str] = "JSON"
    FORMAT_NAME: ClassVar[str] = "a JSON schema"

    def __init__(self) -> None:
        super().__init__()
        self._data = JsonSchemaData()
        self._validate = False

    def _configure_data(self, config: AbstractConfig) -> None:
        self._data = JsonSchemaData(json_schema_data_config(config))
        self._validate = bool(config.get_boolean("json.fail.invalid.schema"))

    @property
    def json_schema_data(self) -> JsonSchemaData:
        """The Connect <-> JSON Schema mapping this converter uses."""
        return self._data

    def _check_schemaless(self, topic: str) -> None:
        raise DataError(
            f"JsonSchemaConverter needs a schema to write a value (topic {topic}); for "
            "schemaless values use org.apache.kafka.connect.json.JsonConverter with "
            "schemas.enable=false")

    def _record_name(self, text: str) -> str | None:
        return json_record_name(text)

    def _writer(self, schema: Schema | None) -> JsonWriteSchema:
        assert schema is not None  # _check_schemaless refused the value
        return self._data.writer(schema)

    def _parse_registered(self, schema: SchemaText) -> Any:
        return parse_json_schema(schema.schema, schema.references, self._resolve)

    def _encode(self, written: JsonWriteSchema, registered: Any, value: Any,
                schema: Schema | None) -> bytes:
        if registered is None:
            return written.write(value, validate=self._validate)
        document = written.to_json(value)
        if self._validate:
            validate_document(registered, document)
        return encode_document(document)

    def _reader(self, schema: SchemaText, version: int | None) -> JsonReadSchema:
        return self._data.reader(schema.schema, schema.references, resolve=self._resolve,
                                 version=version)

    def _decode(self, reader: JsonReadSchema, payload: bytes | memoryview) -> SchemaAndValue:
        converted = reader.read(payload, validate=self._validate)
        if converted is None:
            return SchemaAndValue.NULL
        return SchemaAndValue(reader.schema, converted)

    def _resolve(self, ref: Reference) -> tuple[str, str, tuple[Reference, ...]]:
        found = self.client.get_version(ref.subject, ref.version).schema
        return found.schema_type, found.schema, found.references
