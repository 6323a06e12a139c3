"""Config providers: resolve ``${provider:path:key}`` placeholders in configs (KIP-297)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from connect.api.errors import ConfigError

__all__ = ["ConfigData", "ConfigProvider"]


@dataclass(frozen=True, slots=True)
class ConfigData:
    """Values a provider found under one path, and how long they stay valid.

    ``ttl`` is in milliseconds; None means the values do not expire. When a ttl is given
    the runtime re-reads the values and restarts the connector after that time (with
    ``config.action.reload=restart``).
    """

    data: Mapping[str, str] = field(default_factory=dict)
    ttl: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))
        if self.ttl is not None and self.ttl < 0:
            raise ConfigError(None, f"ConfigData ttl must be None or >= 0 ms, not {self.ttl}")


@runtime_checkable
class ConfigProvider(Protocol):
    """Looks up secrets and other values by path and key, e.g. ``${file:/etc/db.properties:
    password}`` or ``${env:DB_PASSWORD}`` (``config.providers=file,env``).

    Lifecycle: 1. constructed with no arguments; 2. ``configure(configs)`` with its
    ``config.providers.<name>.param.`` keys (prefix removed); 3. ``get()`` whenever a
    connector or task starts; 4. ``close()`` when the worker stops. One instance serves
    the whole worker: ``get()`` may be called from several threads at once and must be
    thread-safe.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Configure; raise ``ConfigError`` naming the bad key."""

    @abstractmethod
    def get(self, path: str, keys: Collection[str] | None = None) -> ConfigData:
        """The values under ``path`` (``""`` when the placeholder names none), all of
        them or only ``keys``. Keys that are not found are left out; the runtime then
        leaves their placeholders unresolved. May block on I/O briefly. Raise
        ``ConfigError`` if the path may not be read (e.g. outside ``allowed.paths``)."""

    @abstractmethod
    def close(self) -> None:
        """Release resources; called once, last."""
