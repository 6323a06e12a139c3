"""Backend selection by URL: the scheme names an entry point in ``ferry.log_backends``."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from importlib.metadata import entry_points

from core.backends.base import LogBackend
from core.backends.errors import InvalidBackendUrlError

__all__ = ["ENTRY_POINT_GROUP", "available_backends", "open_backend"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ferry.log_backends"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.DOTALL)


def available_backends() -> list[str]:
    """Schemes of every installed backend, sorted."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def open_backend(url: str, config: Mapping[str, str] | None = None) -> LogBackend:
    """Open the backend named by ``url``'s scheme (``embedded:PATH``, ``kafka://HOST:PORT``).

    The entry point must name a ``LogBackend`` subclass with a classmethod
    ``from_url(url, config)``; ``config`` carries backend settings by their Kafka names
    (``num.partitions``, ``log.retention.ms``, client properties ...). Raises
    ``InvalidBackendUrlError`` for a malformed URL or an unknown scheme, and whatever
    ``BackendError`` the backend raises while opening.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidBackendUrlError("the log URL is empty; use embedded:PATH or kafka://HOST:PORT")
    match = _SCHEME.match(url.strip())
    if match is None:
        raise InvalidBackendUrlError(
            f"invalid log URL {url!r}: expected SCHEME:..., e.g. embedded:./ferry-data or "
            "kafka://127.0.0.1:9092"
        )
    scheme = match.group(1).lower()
    candidates = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == scheme]
    if not candidates:
        known = ", ".join(available_backends()) or "none installed"
        raise InvalidBackendUrlError(
            f"invalid log URL {url!r}: no backend for scheme {scheme!r} (available: {known})"
        )
    try:
        factory = candidates[0].load()
    except Exception as exc:  # a broken third-party plugin must not crash the caller
        raise InvalidBackendUrlError(
            f"the backend for scheme {scheme!r} ({candidates[0].value}) failed to load: {exc}"
        ) from exc
    backend = factory.from_url(url.strip(), dict(config or {}))
    log.debug("opened %s backend for %s", scheme, url)
    return backend
