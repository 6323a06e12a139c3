"""Converters, header converters and the source offset reader: Connect's storage seams.

Converters turn Connect data (schema + value) into the bytes stored in Kafka and back.
The runtime gives each task its own key converter, value converter and header
converter instances (configured from ``key.converter``, ``value.converter``,
``header.converter`` and their ``*.converter.`` sub-keys) and calls them only from that
task's thread, so a converter needs no locking and may cache schemas. A conversion
failure raises ``DataError``; the runtime's ``errors.tolerance`` decides whether the
record is skipped (and sent to the dead letter queue) or the task fails; a
``RetriableError`` (e.g. a schema registry that cannot be reached) is retried first, for
up to ``errors.retry.timeout``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, MutableSequence
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from connect.api.config import ConfigDef
from connect.api.data import Schema, SchemaAndValue

__all__ = [
    "CONVERTER_TYPE_CONFIG",
    "Converter",
    "ConverterType",
    "HeaderConverter",
    "OffsetStorageReader",
    "RawHeaders",
]

#: The Kafka record's own headers, as the log stores them: ``(key, bytes or None)`` pairs.
#: ``Converter.from_connect_data`` may append to them (e.g. a schema id header).
RawHeaders = MutableSequence[tuple[str, bytes | None]]

#: The key the runtime adds to a converter's configs to say whether it converts keys,
#: values or headers ("key", "value" or "header"), for classes that are both a
#: ``Converter`` and a ``HeaderConverter``.
CONVERTER_TYPE_CONFIG = "converter.type"


class ConverterType(Enum):
    """What a converter instance converts; the value is what ``converter.type`` holds."""

    KEY = "key"
    VALUE = "value"
    HEADER = "header"


@runtime_checkable
class Converter(Protocol):
    """Converts record keys or values between Connect data and bytes.

    Lifecycle: 1. constructed with no arguments; 2. ``configure(configs, is_key)`` once;
    3. ``from_connect_data`` (source tasks, before producing) or ``to_connect_data``
    (sink tasks, after consuming), repeatedly on the task's thread; 4. ``close()`` when
    the task stops. Subclass this protocol to inherit ``config()`` and ``close()``, or
    implement every method.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """Configure with the converter's sub-keys (prefix removed, e.g.
        ``schemas.enable`` from ``value.converter.schemas.enable``); ``is_key`` says
        whether this instance converts keys. Raise ``ConfigError`` on a bad config."""

    @abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        """Serialize ``value`` (valid for ``schema``; None schema means schemaless) for
        ``topic``; None for a null value (a tombstone). May append to ``headers``.

        Called by source tasks for every record, on the task's thread, after
        transformations. May block briefly (e.g. to register a schema). Raise
        ``DataError`` if the value cannot be converted, ``RetriableError`` for a
        transient failure.
        """

    @abstractmethod
    def to_connect_data(
        self, topic: str, value: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        """Deserialize bytes consumed from ``topic``; ``None`` (a tombstone) gives
        ``SchemaAndValue.NULL`` or an optional schema with a None value.

        Called by sink tasks for every record, on the task's thread, before
        transformations. May block briefly (e.g. to fetch a schema). Raise ``DataError``
        on bytes this converter cannot read, ``RetriableError`` for a transient failure.
        """

    def config(self) -> ConfigDef:
        """The converter's declared config keys (shown by ``GET /connector-plugins``)."""
        return ConfigDef()

    def close(self) -> None:
        """Release resources (e.g. a schema registry client); called once, last."""


@runtime_checkable
class HeaderConverter(Protocol):
    """Converts header values between Connect data and bytes, one header at a time.

    Same lifecycle and threading as ``Converter``, with ``configure(configs)`` taking no
    ``is_key``. Subclass this protocol to inherit ``config()`` and ``close()``.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure with the ``header.converter.`` sub-keys (prefix removed)."""

    @abstractmethod
    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        """Serialize one header value; None for a null value. Raise ``DataError`` on
        failure."""

    @abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Deserialize one header value (a header's schema may be inferred from the
        bytes, as the default simple header converter does)."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        """Release resources; called once, last."""


class OffsetStorageReader(ABC):
    """Reads the source offsets the runtime stored for this connector.

    Source partitions and offsets are the maps tasks put in ``SourceRecord``; a task reads
    its offsets in ``start()`` to resume where it left off, and a source connector may read
    them to plan tasks. Implemented by the runtime; thread-safe. Calls block while the
    offsets are read from the offsets topic (normally already cached) and raise
    ``ConnectError`` if they cannot be read.
    """

    @abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The latest committed offset of one source partition, or None if none."""

    def offsets(
        self, partitions: Iterable[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
        """``(partition, offset or None)`` for each partition, in the order given.

        Pairs rather than a dict because partitions are dicts, which cannot be keys.
        The runtime overrides this to read many partitions at once.
        """
        return [(partition, self.offset(partition)) for partition in partitions]
