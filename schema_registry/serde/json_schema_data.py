"""``JsonSchemaData``: Connect data to and from JSON with JSON Schema, cached.

::

    data = JsonSchemaData(JsonSchemaDataConfig())
    written = data.writer(connect_schema)       # .text (the JSON schema), .record_name
    payload = written.write(value, validate=True)
    read = data.reader(text, references, resolve=...)   # .schema (Connect)
    value = read.read(payload, validate=False)

The mapping is in ``json_from_connect`` and ``json_to_connect``. The payload is UTF-8
JSON; ``validate`` checks documents against the schema with ``jsonschema`` (the
converters' ``json.fail.invalid.schema``). Both directions are cached
(``schemas_cache_size`` entries each); a ``JsonSchemaData`` may be shared between
threads.
"""

from __future__ import annotations

import decimal
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema.exceptions import ValidationError

from connect.api.data import Schema
from connect.api.errors import DataError
from schema_registry.schemas import JsonSchema, Reference, Resolve, SchemaError, parse_schema
from schema_registry.serde.cache import LruCache
from schema_registry.serde.json_from_connect import (
    JsonSchemaDataConfig,
    from_connect_data,
    from_connect_schema,
)
from schema_registry.serde.json_to_connect import ToConnect, to_connect_data

__all__ = [
    "JsonReadSchema",
    "JsonSchemaData",
    "JsonWriteSchema",
    "dumps",
    "encode_document",
    "parse_json_schema",
    "validate_document",
]


def dumps(document: Any) -> str:
    """Compact JSON text; ``decimal.Decimal`` numbers are written exactly."""
    try:
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    except TypeError:
        return _exact(document)


def _exact(value: Any) -> str:
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise DataError(f"Cannot write the non-finite decimal {value} as JSON")
        return format(value, "f") if value.as_tuple().exponent >= -30 else str(value)
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k), ensure_ascii=False) + ":" + _exact(v)
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_exact(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def parse_json_schema(schema_text: str, references: Sequence[Reference] = (),
                      resolve: Resolve | None = None) -> JsonSchema:
    """The parsed (validated) JSON schema; ``DataError`` if it is invalid."""
    try:
        parsed = parse_schema("JSON", schema_text, references, resolve)
    except SchemaError as exc:
        raise DataError(f"Invalid JSON schema: {exc}") from exc
    assert isinstance(parsed, JsonSchema)
    return parsed


def validate_document(parsed: JsonSchema, document: Any) -> None:
    """Raise ``DataError`` naming where ``document`` does not match ``parsed``."""
    try:
        parsed.validator().validate(document)
    except ValidationError as exc:
        where = "/" + "/".join(str(p) for p in exc.absolute_path)
        raise DataError(f"JSON document does not match its schema at {where}: "
                        f"{exc.message}") from exc


def encode_document(document: Any) -> bytes:
    """UTF-8 JSON text of a document."""
    try:
        return dumps(document).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DataError(f"Cannot write a string with a lone surrogate as UTF-8: {exc}") \
            from exc


@dataclass(slots=True)
class JsonWriteSchema:
    """How values of one Connect schema are written; ``text`` is the schema to
    register, ``record_name`` (its title) what subject strategies see."""

    connect_schema: Schema
    text: str
    record_name: str | None
    config: JsonSchemaDataConfig
    _parsed: JsonSchema | None = field(default=None, repr=False)

    def to_json(self, value: Any) -> Any:
        return from_connect_data(self.connect_schema, value, self.config)

    def write(self, value: Any, *, validate: bool = False) -> bytes:
        """UTF-8 JSON of ``value``; with ``validate`` a document that does not match the
        schema raises ``DataError``."""
        document = self.to_json(value)
        if validate:
            if self._parsed is None:
                self._parsed = parse_json_schema(self.text)
            validate_document(self._parsed, document)
        return encode_document(document)


@dataclass(frozen=True, slots=True)
class JsonReadSchema:
    """How data written with one JSON schema is read: ``schema`` is its Connect
    schema."""

    schema: Schema
    parsed: JsonSchema
    config: JsonSchemaDataConfig

    def read(self, payload: bytes | memoryview, *, validate: bool = False) -> Any:
        try:
            document = json.loads(bytes(payload).decode("utf-8"),
                                  parse_float=decimal.Decimal)
        except (UnicodeDecodeError, ValueError) as exc:
            raise DataError(f"The payload is not valid UTF-8 JSON: {exc}") from exc
        if document is None:
            return None
        if validate:
            validate_document(self.parsed, document)
        return to_connect_data(self.schema, document, self.config)


class JsonSchemaData:
    """Confluent's Connect <-> JSON Schema mapping with its options."""

    def __init__(self, config: JsonSchemaDataConfig | None = None) -> None:
        self.config = config or JsonSchemaDataConfig()
        self._lock = threading.Lock()  # guards both caches
        self._writers: LruCache[Schema, JsonWriteSchema] = \
            LruCache(self.config.schemas_cache_size)
        self._readers: LruCache[tuple[str, tuple[Reference, ...], int | None],
                                JsonReadSchema] = LruCache(self.config.schemas_cache_size)

    def from_connect_schema(self, schema: Schema) -> dict[str, Any]:
        """The JSON schema of a Connect schema, as a dict."""
        return from_connect_schema(schema, self.config)

    def writer(self, schema: Schema) -> JsonWriteSchema:
        """Everything needed to write values of ``schema`` (cached)."""
        def build() -> JsonWriteSchema:
            document = from_connect_schema(schema, self.config)
            title = document.get("title")
            return JsonWriteSchema(schema, dumps(document),
                                   title if isinstance(title, str) else None, self.config)

        return self._writers.get_or_build(schema, build, self._lock)

    def reader(self, text: str, references: Sequence[Reference] = (), *,
               resolve: Resolve | None = None, version: int | None = None) -> JsonReadSchema:
        """Everything needed to read data written with JSON schema ``text``;
        ``resolve`` fetches referenced schemas (see ``parse_schema``). Cached."""
        def build() -> JsonReadSchema:
            parsed = parse_json_schema(text, references, resolve)
            resolver = parsed.registry.resolver(base_uri=parsed.base_uri)
            schema = ToConnect(self.config, resolver).convert(parsed.schema, version=version)
            return JsonReadSchema(schema, parsed, self.config)

        return self._readers.get_or_build((text, tuple(references), version), build,
                                          self._lock)

    def to_connect_schema(self, text: str, *, version: int | None = None) -> Schema:
        """The Connect schema of a JSON schema text."""
        return self.reader(text, version=version).schema
