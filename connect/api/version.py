"""Versioned: the plugin version every connector and task reports."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol, runtime_checkable

__all__ = ["Versioned"]


@runtime_checkable
class Versioned(Protocol):
    """A plugin that reports its version. Connectors and tasks must; converters,
    transformations, predicates and config providers may, and the runtime shows the
    version where they do (``isinstance(plugin, Versioned)``)."""

    @abstractmethod
    def version(self) -> str:
        """The plugin's version, e.g. ``"1.4.0"``.

        Called by the runtime on any thread, possibly on an instance that was never
        started (plugin listing, ``GET /connector-plugins``, status). Must not block and
        must not depend on ``start()``; a constant or the distribution's version is best.
        """
