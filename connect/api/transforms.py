"""Single message transformations (SMTs) and the predicates that gate them."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from connect.api.config import ConfigDef
from connect.api.record import ConnectRecord

__all__ = ["Predicate", "Transformation"]

R = TypeVar("R", bound=ConnectRecord)


@runtime_checkable
class Transformation(Protocol[R]):
    """Rewrites or drops one record at a time (``transforms=a,b``; ``transforms.a.type``).

    Lifecycle: 1. constructed with no arguments; 2. ``configure(configs)`` with the
    ``transforms.<alias>.`` keys (prefix removed); 3. ``apply(record)`` for every record,
    source records after ``poll()`` and sink records before ``put()``; 4. ``close()`` when
    the task stops. Each task has its own instance per alias and calls it only from the
    task's thread, so no locking is needed.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Parse the config (with ``config().parse(configs)``); raise ``ConfigError``."""

    @abstractmethod
    def apply(self, record: R) -> R | None:
        """The transformed record, or None to drop it. Return a new record made with
        ``record.new_record(...)`` rather than changing the input (its headers are the
        only mutable part). Called on the task's thread, in chain order. Raise
        ``DataError`` for a record it cannot transform; ``errors.tolerance`` decides
        whether it is skipped. Must not block."""

    @abstractmethod
    def config(self) -> ConfigDef:
        """The declared config keys, embedded under ``transforms.<alias>.`` for
        validation and ``GET /connector-plugins``."""

    @abstractmethod
    def close(self) -> None:
        """Release resources; called once, last."""


@runtime_checkable
class Predicate(Protocol[R]):
    """Decides whether a transformation applies to a record (``predicates=p``;
    ``transforms.a.predicate=p``, optionally ``transforms.a.negate=true``).

    Same lifecycle and threading as ``Transformation``, configured with the
    ``predicates.<alias>.`` keys.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Parse the config; raise ``ConfigError``."""

    @abstractmethod
    def test(self, record: R) -> bool:
        """Whether the record matches. Must not change it or block."""

    @abstractmethod
    def config(self) -> ConfigDef:
        """The declared config keys."""

    @abstractmethod
    def close(self) -> None:
        """Release resources; called once, last."""
