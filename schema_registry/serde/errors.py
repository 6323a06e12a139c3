"""Errors of the serialization layer (registry client, wire format, data mapping).

::

    SerdeError                        base of everything ``schema_registry.serde`` raises
    ├── SerializationError            bytes that are not a Confluent frame, or a value that
    │                                 cannot be written or read with its schema
    └── RegistryClientError           the registry answered with an error; carries the HTTP
        │                             status and Confluent's ``error_code`` and ``message``
        └── RegistryUnavailableError  the registry could not be reached in time (retriable)

The Connect converters translate these at their edge: ``RegistryUnavailableError`` and
server-side (5xx) failures become ``RetriableError``, everything else ``DataError``.
"""

from __future__ import annotations

__all__ = [
    "RegistryClientError",
    "RegistryUnavailableError",
    "SerdeError",
    "SerializationError",
]


class SerdeError(Exception):
    """Base of every error of the serialization layer."""


class SerializationError(SerdeError):
    """Bytes that are not in the Confluent wire format, or a value that does not fit its
    schema; the message says which and what to check."""


class RegistryClientError(SerdeError):
    """An error answer from the Schema Registry.

    ``status`` is the HTTP status, ``error_code`` Confluent's code (40401 subject not
    found, 40403 schema not found, 409 incompatible, 42201 invalid schema, 50001 ...; the
    HTTP status when the body carried none) and ``message`` the registry's text.
    """

    def __init__(self, status: int, error_code: int, message: str, *, url: str = "") -> None:
        self.status = status
        self.error_code = error_code
        self.message = message
        self.url = url
        where = f" ({url})" if url else ""
        super().__init__(f"Schema Registry error {error_code}{where}: {message}")

    @property
    def retriable(self) -> bool:
        """Whether retrying later may succeed: a server-side failure (5xx)."""
        return self.status >= 500


class RegistryUnavailableError(RegistryClientError):
    """No registry URL answered within the timeout (connection refused, reset, timed
    out); retry later or check ``schema.registry.url``."""

    def __init__(self, message: str, *, url: str = "") -> None:
        super().__init__(0, -1, message, url=url)

    @property
    def retriable(self) -> bool:
        return True
