"""Errors that plugins raise and receive through the Connect plugin API.

Everything Connect raises derives from ``ConnectError``, so a caller handles one tree::

    ConnectError                      base; any other failure of a connector, task or plugin
    ├── RetriableError                transient: the runtime may retry the same operation
    ├── DataError                     a value does not match its schema, or cannot be
    │   │                             converted (Kafka's DataException)
    │   └── SchemaBuilderError        a schema definition is inconsistent
    ├── ConfigError                   a configuration value is missing or invalid;
    │                                 ``name`` names the key (Kafka's ConfigException)
    ├── NotFoundError                 a connector, task or plugin does not exist (REST: 404)
    ├── AlreadyExistsError            a connector of that name exists already (REST: 409)
    └── IllegalWorkerStateError       an API object was used outside its lifecycle, e.g.
                                      a task's context read before ``initialize()``

The REST layer maps ``NotFoundError`` to 404, ``AlreadyExistsError`` to 409 and
``ConfigError`` to 400; everything else is a 500. A sink task's ``put()`` or a source
task's ``poll()`` raising ``RetriableError`` asks for a retry; any other exception fails
the task.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AlreadyExistsError",
    "ConfigError",
    "ConnectError",
    "DataError",
    "IllegalWorkerStateError",
    "NotFoundError",
    "RetriableError",
    "SchemaBuilderError",
]


class ConnectError(Exception):
    """Base of every error in Connect."""


class RetriableError(ConnectError):
    """A transient failure: the same operation may succeed if retried later.

    Raised by ``SinkTask.put()`` it makes the runtime redeliver the same batch after the
    backoff the task set with ``SinkTaskContext.timeout()``; raised by
    ``SourceTask.poll()`` the runtime calls ``poll()`` again.
    """


class DataError(ConnectError):
    """A value does not match its schema, or data cannot be converted."""


class SchemaBuilderError(DataError):
    """A schema definition is inconsistent (e.g. fields on a non-struct schema)."""


class _NoValue:
    def __repr__(self) -> str:
        return "<no value>"


_NO_VALUE: Any = _NoValue()


class ConfigError(ConnectError):
    """A configuration value is missing or invalid.

    ``name`` is the configuration key (``None`` when the error concerns no single key).
    With ``value`` the message reads ``Invalid value V for configuration NAME: MESSAGE``,
    as Kafka's does. Callers pass a password as its ``Password`` object, whose ``str()``
    is ``[hidden]``, so a secret never reaches a message or a log.
    """

    def __init__(self, name: str | None, message: str, *, value: Any = _NO_VALUE) -> None:
        self.name = name
        if name is not None and value is not _NO_VALUE:
            shown = "null" if value is None else str(value)
            message = f"Invalid value {shown} for configuration {name}: {message}"
        super().__init__(message)


class NotFoundError(ConnectError):
    """A connector, task, plugin or other named resource does not exist."""


class AlreadyExistsError(ConnectError):
    """A resource of that name exists already (e.g. creating a connector twice)."""


class IllegalWorkerStateError(ConnectError):
    """An API object was used outside its lifecycle (before ``initialize()``, after
    ``stop()``)."""
