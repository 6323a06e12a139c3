"""Serialization with the Schema Registry: the client, the wire format, subject name
strategies, Confluent's Connect mappings to Avro and JSON Schema, and the converters.

* ``client``: ``RegistryClient`` (register, lookup, schema by id, versions; cached,
  thread-safe) and its ``SchemaText``/``RegisteredSchema`` data
* ``wire``: magic byte 0 + 4-byte schema id + payload
* ``strategies``: TopicName, RecordName and TopicRecordName subject strategies
* ``avro_data`` (with ``avro_from_connect``, ``avro_render``, ``avro_writer``,
  ``avro_to_connect``, ``avro_reader``, ``avro_compile``, ``avro_names``): Connect <->
  Avro as Confluent's ``AvroData``
* ``json_schema_data`` (with ``json_from_connect``, ``json_to_connect``): Connect <-> JSON
  Schema as Confluent's ``JsonSchemaData``
* ``avro_converter``, ``json_schema_converter`` (with ``converter_base``,
  ``converter_config``): the Connect converters, registered under ``ferry.converters``
  with Confluent's class names
* ``errors``: the error tree; ``cache``, ``connect_schema``: small shared helpers

This package imports only ``connect.api`` and the schema model
(``schema_registry.schemas``): it runs inside Connect workers and client code, never
inside the registry server.
"""

from schema_registry.serde.avro_converter import AvroConverter
from schema_registry.serde.avro_data import AvroData
from schema_registry.serde.avro_names import AvroDataConfig
from schema_registry.serde.client import RegisteredSchema, RegistryClient, SchemaText
from schema_registry.serde.errors import (
    RegistryClientError,
    RegistryUnavailableError,
    SerdeError,
    SerializationError,
)
from schema_registry.serde.json_from_connect import JsonSchemaDataConfig
from schema_registry.serde.json_schema_converter import JsonSchemaConverter
from schema_registry.serde.json_schema_data import JsonSchemaData
from schema_registry.serde.strategies import (
    RecordNameStrategy,
    SubjectNameStrategy,
    TopicNameStrategy,
    TopicRecordNameStrategy,
    resolve_strategy,
)
from schema_registry.serde.wire import frame, unframe

__all__ = [
    "AvroConverter",
    "AvroData",
    "AvroDataConfig",
    "JsonSchemaConverter",
    "JsonSchemaData",
    "JsonSchemaDataConfig",
    "RecordNameStrategy",
    "RegisteredSchema",
    "RegistryClient",
    "RegistryClientError",
    "RegistryUnavailableError",
    "SchemaText",
    "SerdeError",
    "SerializationError",
    "SubjectNameStrategy",
    "TopicNameStrategy",
    "TopicRecordNameStrategy",
    "frame",
    "resolve_strategy",
    "unframe",
]
