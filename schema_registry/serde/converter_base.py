"""What the registry converters share: configuration, the schema id of written data,
the version of read data, reference resolution and error translation.

Writing (``from_connect_data``): the value is converted and encoded first, so a bad
value never registers a schema; then the schema id comes from, in order,
``use.schema.id``, registration (``auto.register.schemas``, the default), the subject's
latest version (``use.latest.version``: the data is then written with that schema), or
a lookup. Reading (``to_connect_data``): the writer's schema is fetched by id, and its
version under the subject the strategy names becomes the Connect schema's version (when
the schema does not carry ``connect.version``); a schema not registered under that
subject simply has no version.

Errors: a registry that cannot be reached or fails (5xx) raises ``RetriableError`` (the
runtime retries); any other failure ``DataError`` naming the topic.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

from connect.api.config import AbstractConfig, ConfigDef
from connect.api.errors import ConnectError, DataError, RetriableError
from connect.api.storage import Converter
from schema_registry.schemas import Reference
from schema_registry.serde.cache import LruCache
from schema_registry.serde.client import RegisteredSchema, RegistryClient, SchemaText
from schema_registry.serde.converter_config import RegistrySettings
from schema_registry.serde.errors import RegistryClientError, SerdeError
from schema_registry.serde.strategies import SubjectNameStrategy

__all__ = ["RegistryConverter"]

log = logging.getLogger(__name__)

_TO_BYTES = "Converting Kafka Connect data to byte[] failed due to serialization error"
_FROM_BYTES = "Converting byte[] to Kafka Connect data failed due to serialization error"


def _plugin_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class RegistryConverter(Converter):
    """Base of ``AvroConverter`` and ``JsonSchemaConverter``.

    Lifecycle as ``Converter``'s: constructed empty (no registry contact), configured
    once, then used from one task thread; ``close()`` releases the registry client.
    """

    CONFIG_DEF: ClassVar[ConfigDef]
    SCHEMA_TYPE: ClassVar[str]

    def __init__(self) -> None:
        self._client: RegistryClient | None = None
        self._settings: RegistrySettings | None = None
        self._is_key = False
        # (topic, schema id) -> what reading needs; (subject, text) -> registry schema
        self._read_cache: LruCache[tuple[str, int], Any] = LruCache(1000)

    # -- Converter -----------------------------------------------------------------------

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def version(self) -> str:
        return _plugin_version()

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        parsed = AbstractConfig(self.CONFIG_DEF, configs)
        settings = RegistrySettings.parse(parsed)
        self._configure_data(parsed)
        self.close()
        self._settings = settings
        self._client = settings.client()
        self._is_key = bool(is_key)
        self._read_cache = LruCache(settings.cache_capacity)

    @abstractmethod
    def _configure_data(self, config: AbstractConfig) -> None:
        """Read the format-specific keys."""

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

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
