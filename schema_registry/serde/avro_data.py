"""``AvroData``: Connect data to and from Avro binary, Confluent's mapping, cached.

::

    data = AvroData(AvroDataConfig())
    written = data.writer(connect_schema)        # AvroWriteSchema: .text, .record_name
    payload = written.write(value)               # Avro binary (no frame)
    read = data.reader(text, version=3)          # AvroReadSchema: .schema (Connect)
    value = read.read(payload)

The mapping is in ``avro_from_connect``/``avro_writer`` (Connect to Avro) and
``avro_to_connect``/``avro_reader`` (Avro to Connect); the bytes are fastavro's
``schemaless_writer``/``schemaless_reader`` on schemas stripped of ``logicalType`` (the
logical conversions are Connect's, done by the mapping). A null schema means schemaless
data, written with Confluent's ``Anything`` record.

Both directions are cached (``schemas_cache_size`` entries each); an ``AvroData`` may be
shared between threads.
"""

from __future__ import annotations

import copy
import io
import json
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer

from connect.api.data import Schema, validate_value
from connect.api.errors import DataError
from schema_registry.serde import avro_names as n
from schema_registry.serde.avro_from_connect import FromConnect, Node
from schema_registry.serde.avro_reader import (
    compile_reader,
    default_from_json,
    from_anything,
)
from schema_registry.serde.avro_render import render
from schema_registry.serde.avro_to_connect import ToConnect, resolve
from schema_registry.serde.avro_writer import compile_writer, to_anything
from schema_registry.serde.cache import LruCache

__all__ = ["AvroData", "AvroReadSchema", "AvroWriteSchema", "record_name"]

# What fastavro raises on data that does not fit its schema, or bytes it cannot read.
_CODEC_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError, EOFError,
                 IndexError, UnicodeDecodeError)


def record_name(node: Node) -> str | None:
    """The name subject strategies use: a named type's full name, another type's name,
    None for a union (as Confluent's serializers name them)."""
    if isinstance(node, list):
        return None
    if isinstance(node, str):
        return node
    return str(node["name"]) if node["type"] in n.NAMED_TYPES else str(node["type"])


def _strip_logical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_logical(v) for k, v in value.items() if k != n.LOGICAL_TYPE_PROP}
    if isinstance(value, list):
        return [_strip_logical(v) for v in value]
    return value


def _fastavro(value: Any, named: dict[str, Any]) -> Any:
    try:
        return parse_schema(_strip_logical(value), named_schemas=named,
                            _ignore_default_error=True)
    except Exception as exc:  # fastavro reports schema problems with many exception types
        raise DataError(f"fastavro cannot use the Avro schema: {exc}") from exc


@dataclass(frozen=True, slots=True)
class AvroWriteSchema:
    """How values of one Connect schema are written: ``text`` is the Avro schema to
    register, ``record_name`` what subject strategies see."""

    connect_schema: Schema | None
    text: str
    record_name: str | None
    parsed: Any
    to_datum: Callable[[Any], Any]

    def write(self, value: Any) -> bytes:
        """Avro binary of ``value`` (raises ``DataError`` if it does not fit)."""
        return encode(self.parsed, self.to_datum, value, self.connect_schema)


@dataclass(frozen=True, slots=True)
class AvroReadSchema:
    """How data written with one Avro schema is read: ``schema`` is its Connect schema
    (None for Confluent's schemaless ``Anything``)."""

    schema: Schema | None
    parsed: Any
    from_datum: Callable[[Any], Any]

    def read(self, payload: bytes | memoryview) -> Any:
        try:
            datum = schemaless_reader(io.BytesIO(payload), self.parsed, None,
                                      return_named_type=True)
        except _CODEC_ERRORS as exc:
            raise DataError(f"Cannot read Avro data with the writer's schema: "
                            f"{type(exc).__name__}: {exc}") from exc
        return self.from_datum(datum)


def encode(parsed: Any, to_datum: Callable[[Any], Any], value: Any,
           schema: Schema | None) -> bytes:
    """fastavro's binary of ``to_datum(value)``; a failure becomes a ``DataError`` naming
    the bad value where Connect's validation can."""
    buffer = io.BytesIO()
    try:
        schemaless_writer(buffer, parsed, to_datum(value))
    except DataError:
        raise
    except _CODEC_ERRORS as exc:
        if schema is not None:
            validate_value(schema, value)  # raises a DataError naming the bad field
        raise DataError(f"Cannot write the value as Avro: {type(exc).__name__}: {exc}") \
            from exc
    return buffer.getvalue()


class AvroData:
    """Confluent's Connect <-> Avro mapping with its options (``AvroDataConfig``)."""

    def __init__(self, config: n.AvroDataConfig | None = None) -> None:
        self.config = config or n.AvroDataConfig()
        self._lock = threading.Lock()  # guards both caches
        self._writers: LruCache[Hashable, AvroWriteSchema] = \
            LruCache(self.config.schemas_cache_size)
        # readers, and fastavro's form of registry schemas (keys starting "fastavro")
        self._readers: LruCache[Hashable, Any] = LruCache(self.config.schemas_cache_size)

    # -- Connect to Avro -----------------------------------------------------------------

    def from_connect_schema(self, schema: Schema | None) -> Any:
        """The Avro schema (JSON value) of a Connect schema, as Confluent writes it."""
        return json.loads(self.writer(schema).text)

    def writer(self, schema: Schema | None) -> AvroWriteSchema:
        """Everything needed to write values of ``schema`` (cached)."""
        key = ("anything",) if schema is None else schema
        return self._writers.get_or_build(key, lambda: self._build_writer(schema), self._lock)

    def _build_writer(self, schema: Schema | None) -> AvroWriteSchema:
        if schema is None:
            text = json.dumps(n.ANYTHING_SCHEMA, separators=(",", ":"))
            parsed = _fastavro(copy.deepcopy(n.ANYTHING_SCHEMA), {})
            return AvroWriteSchema(None, text, n.AVRO_TYPE_ANYTHING, parsed, to_anything)
        node = FromConnect(self.config).convert(schema)
        rendered = render(node)
        text = json.dumps(rendered, separators=(",", ":"), ensure_ascii=False)
        parsed = _fastavro(rendered, {})
        return AvroWriteSchema(schema, text, record_name(node), parsed,
                               compile_writer(schema, node, self.config))

    def from_connect_data(self, schema: Schema | None, value: Any) -> bytes:
        """Avro binary of a Connect value (no frame)."""
        return self.writer(schema).write(value)

    # -- Avro to Connect -----------------------------------------------------------------

    def reader(self, text: str, references: Sequence[str] = (), *,
               version: int | None = None) -> AvroReadSchema:
        """Everything needed to read data written with Avro schema ``text``;
        ``references`` are the texts of the schemas it references, dependencies first.
        ``version`` is the Connect schema's version when the schema carries no
        ``connect.version`` (the converter passes the registry version). Cached."""
        key = (text, tuple(references), version)
        return self._readers.get_or_build(
            key, lambda: self._build_reader(text, references, version), self._lock)

    def _build_reader(self, text: str, references: Sequence[str],
                      version: int | None) -> AvroReadSchema:
        names: dict[str, Node] = {}
        fastavro_named: dict[str, Any] = {}
        for ref_text in references:
            ref_value = _load(ref_text)
            resolve(ref_value, names)
            _fastavro(ref_value, fastavro_named)
        value = _load(text)
        node = resolve(value, names)
        parsed = _fastavro(value, fastavro_named)
        if isinstance(node, dict) and node.get("name") == n.AVRO_TYPE_ANYTHING:
            return AvroReadSchema(None, parsed, from_anything)
        to_connect = ToConnect(self.config, default_from_json(self.config))
        schema = to_connect.convert(node, version=version)
        return AvroReadSchema(schema, parsed, compile_reader(schema, node, self.config))

    def fastavro_schema(self, text: str, references: Sequence[str] = ()) -> Any:
        """fastavro's parsed form (without logical types) of an Avro schema text, to
        write datums with a registry's schema (``use.latest.version``). Cached."""
        def build() -> Any:
            named: dict[str, Any] = {}
            for ref_text in references:
                _fastavro(_load(ref_text), named)
            return _fastavro(_load(text), named)

        return self._readers.get_or_build(("fastavro", text, tuple(references)), build,
                                          self._lock)

    def to_connect_schema(self, text: str, *, version: int | None = None) -> Schema | None:
        """The Connect schema of an Avro schema text (None for ``Anything``)."""
        return self.reader(text, version=version).schema

    def to_connect_data(self, text: str, payload: bytes | memoryview, *,
                        version: int | None = None) -> tuple[Schema | None, Any]:
        """``(Connect schema, value)`` of Avro binary written with schema ``text``."""
        read = self.reader(text, version=version)
        return read.schema, read.read(payload)


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DataError(f"The Avro schema is not valid JSON: {exc}") from exc

