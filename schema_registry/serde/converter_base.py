"""What the registry converters share: configuration, the conversion steps and their
caches, the schema id of written data, the version of read data, reference resolution
and error translation; each format supplies its own steps (``RegistryConverter``'s
abstract methods).

Writing (``from_connect_data``): the Connect schema is converted and its schema id
found (once per topic and schema), then the value is encoded and framed. The schema id
comes from, in order, ``use.schema.id``, registration (``auto.register.schemas``, the
default), the subject's latest version (``use.latest.version``: the data is then written
with that schema), or a lookup. Reading (``to_connect_data``): the writer's schema is
fetched by id, and its version under the subject the strategy names becomes the Connect
schema's version (when the schema does not carry ``connect.version``); a schema not
registered under that subject simply has no version.

Errors: a registry that cannot be reached or fails (5xx) raises ``RetriableError`` (the
runtime retries); any other failure ``DataError`` naming the topic.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from connect.api.config import AbstractConfig, ConfigDef
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import ConnectError, DataError, RetriableError
from connect.api.storage import Converter, RawHeaders
from schema_registry.schemas import Reference
from schema_registry.serde.cache import LruCache
from schema_registry.serde.client import RegisteredSchema, RegistryClient, SchemaText
from schema_registry.serde.converter_config import RegistrySettings
from schema_registry.serde.errors import RegistryClientError, SerdeError
from schema_registry.serde.strategies import SubjectNameStrategy
from schema_registry.serde.wire import frame, unframe

__all__ = ["RegistryConverter", "WriteSchema"]

log = logging.getLogger(__name__)

_TO_BYTES = "Converting Kafka Connect data to byte[] failed due to serialization error"
_FROM_BYTES = "Converting byte[] to Kafka Connect data failed due to serialization error"


def _plugin_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class WriteSchema(Protocol):
    """What a format's writer for one Connect schema tells the converter."""

    @property
    def text(self) -> str:
        """The schema to register."""
        ...

    @property
    def record_name(self) -> str | None:
        """The name subject strategies see."""
        ...


W = TypeVar("W", bound=WriteSchema)  # how a format writes values of one Connect schema
R = TypeVar("R")  # how a format reads data written with one registered schema
_MAX_WRITE_ENTRIES = 1000


class RegistryConverter(Converter, Generic[W, R]):
    """Base of ``AvroConverter`` and ``JsonSchemaConverter``: the conversions, framing,
    caches and registry calls; a subclass supplies the format's steps (the abstract
    methods below).

    Lifecycle as ``Converter``'s: constructed empty (no registry contact), configured
    once, then used from one task thread; ``close()`` releases the registry client.
    """

    CONFIG_DEF: ClassVar[ConfigDef]
    SCHEMA_TYPE: ClassVar[str]
    #: How errors name the format ("... is a JSON schema, not Avro").
    FORMAT_NAME: ClassVar[str]

    def __init__(self) -> None:
        self._client: RegistryClient | None = None
        self._settings: RegistrySettings | None = None
        self._is_key = False
        # (topic, schema id) -> what reading needs
        self._read_cache: LruCache[tuple[str, int], R] = LruCache(1000)
        # (topic, Connect schema) -> (writer, schema id, what the format made of the
        # registry's schema, or None); the entry used last is kept apart, as a task
        # converts long runs of one schema
        self._written: dict[tuple[str, Schema | None], tuple[W, int, Any]] = {}
        self._last: tuple[str, Schema | None, tuple[W, int, Any]] | None = None

    # -- Converter -----------------------------------------------------------------------

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def version(self) -> str:
        return _plugin_version()

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        parsed = AbstractConfig(self.CONFIG_DEF, configs)
        settings = RegistrySettings.parse(parsed)
        self._configure_data(parsed)
        self._written = {}
        self._last = None
        self.close()
        self._settings = settings
        self._client = settings.client()
        self._is_key = bool(is_key)
        self._read_cache = LruCache(settings.cache_capacity)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: RawHeaders | None = None) -> bytes | None:
        if value is None:
            self._check_null(topic, schema)
            return None
        if schema is None:
            self._check_schemaless(topic)
        with self.translated(topic, writing=True):
            last = self._last
            if last is not None and last[0] == topic and last[1] is schema:
                entry = last[2]
            else:
                entry = self._write_entry(topic, schema)
                self._last = (topic, schema, entry)
            written, schema_id, registered = entry
            return frame(schema_id, self._encode(written, registered, value, schema))
        raise AssertionError("unreachable")  # pragma: no cover

    def to_connect_data(self, topic: str, value: bytes | None,
                        headers: RawHeaders | None = None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        with self.translated(topic, writing=False):
            schema_id, payload = unframe(value)
            reader = self._read_cache.get((topic, schema_id))
            if reader is None:
                reader = self._read_entry(topic, schema_id)
                self._read_cache.put((topic, schema_id), reader)
            return self._decode(reader, payload)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the format's steps --------------------------------------------------------------

    @abstractmethod
    def _configure_data(self, config: AbstractConfig) -> None:
        """Read the format-specific keys."""

    def _check_null(self, topic: str, schema: Schema | None) -> None:
        """Raise ``DataError`` if a null value may not be written with ``schema``."""

    def _check_schemaless(self, topic: str) -> None:
        """Raise ``DataError`` if the format cannot write values without a schema."""

    @abstractmethod
    def _record_name(self, text: str) -> str | None:
        """The name subject strategies see for a registered schema's text."""

    @abstractmethod
    def _writer(self, schema: Schema | None) -> W:
        """How values of ``schema`` are written."""

    @abstractmethod
    def _parse_registered(self, schema: SchemaText) -> Any:
        """The registry's schema made ready for ``_encode``, when data must be written
        with it (``use.schema.id``, ``use.latest.version``)."""

    @abstractmethod
    def _encode(self, written: W, registered: Any, value: Any, schema: Schema | None) -> bytes:
        """The payload of ``value``; ``registered`` is None or ``_parse_registered``'s."""

    @abstractmethod
    def _reader(self, schema: SchemaText, version: int | None) -> R:
        """How data written with the registered ``schema`` is read."""

    @abstractmethod
    def _decode(self, reader: R, payload: bytes | memoryview) -> SchemaAndValue:
        """The Connect data of a payload."""

    def _write_entry(self, topic: str, schema: Schema | None) -> tuple[W, int, Any]:
        key = (topic, schema)
        entry = self._written.get(key)
        if entry is not None:
            return entry
        written = self._writer(schema)
        subject = self.strategy.subject_name(topic, self._is_key, written.record_name)
        schema_id, registry_schema = self.schema_id(
            subject, SchemaText(written.text, self.SCHEMA_TYPE))
        registered = None if registry_schema is None else \
            self._parse_registered(registry_schema)
        entry = (written, schema_id, registered)
        if len(self._written) >= _MAX_WRITE_ENTRIES:
            self._written.clear()
        self._written[key] = entry
        return entry

    def _read_entry(self, topic: str, schema_id: int) -> R:
        schema = self.client.get_schema(schema_id)
        if schema.schema_type != self.SCHEMA_TYPE:
            raise DataError(f"Schema {schema_id} is a {schema.schema_type} schema, not "
                            f"{self.FORMAT_NAME}: configure the converter matching the "
                            "topic's data")
        subject = self.strategy.subject_name(topic, self._is_key,
                                             self._record_name(schema.schema))
        return self._reader(schema, self.version_of(subject, schema))

    # -- shared steps --------------------------------------------------------------------

    @property
    def client(self) -> RegistryClient:
        if self._client is None:
            raise DataError(f"{type(self).__name__} is used before configure()")
        return self._client

    @property
    def strategy(self) -> SubjectNameStrategy:
        assert self._settings is not None
        return self._settings.key_strategy if self._is_key else self._settings.value_strategy

    def schema_id(self, subject: str, schema: SchemaText) -> tuple[int, SchemaText | None]:
        """The id to frame written data with, and the registry's schema when the data
        must be written with it rather than with ``schema``."""
        settings = self._settings
        assert settings is not None
        client = self.client
        if settings.use_schema_id >= 0:
            return settings.use_schema_id, client.get_schema(settings.use_schema_id)
        if settings.auto_register:
            return client.register(subject, schema, normalize=settings.normalize), None
        if settings.use_latest_version:
            latest = client.get_latest_version(subject)
            return latest.schema_id, latest.schema
        return client.lookup(subject, schema, normalize=settings.normalize).schema_id, None

    def version_of(self, subject: str, schema: SchemaText) -> int | None:
        """The version of ``schema`` under ``subject``, None if it is not registered
        there."""
        try:
            return self.client.lookup(subject, schema).version
        except RegistryClientError as exc:
            if exc.status != 404:
                raise
            log.debug("Schema not registered under %s (%s); reading it without a version",
                      subject, exc.message)
            return None

    def referenced(self, schema: SchemaText) -> list[RegisteredSchema]:
        """The schemas ``schema`` references, transitively, dependencies first."""
        out: list[RegisteredSchema] = []
        seen: set[tuple[str, int]] = set()

        def visit(references: tuple[Reference, ...]) -> None:
            for ref in references:
                key = (ref.subject, ref.version)
                if key in seen:
                    continue
                seen.add(key)
                found = self.client.get_version(ref.subject, ref.version)
                visit(found.schema.references)
                out.append(found)

        visit(schema.references)
        return out

    @contextmanager
    def translated(self, topic: str, *, writing: bool) -> Iterator[None]:
        """Turn serde and registry failures into Connect's errors."""
        prefix = f"{_TO_BYTES if writing else _FROM_BYTES} of topic {topic}"
        try:
            yield
        except RegistryClientError as exc:
            if exc.retriable:
                raise RetriableError(f"{prefix}: {exc}") from exc
            raise DataError(f"{prefix}: {exc}") from exc
        except (SerdeError, DataError) as exc:
            raise DataError(f"{prefix}: {exc}") from exc
        except ConnectError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise DataError(f"{prefix}: {type(exc).__name__}: {exc}") from exc
