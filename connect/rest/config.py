"""The REST settings of a worker config, parsed once with Kafka's key names.

``listeners`` (``http://HOST:PORT`` or ``https://HOST:PORT``, first one used; an empty
host means every interface), else the older ``rest.host.name``/``rest.port``, else
``127.0.0.1:8083``.
``rest.advertised.host.name``/``rest.advertised.port`` name the worker (its id).
``topic.tracking.enable`` and ``topic.tracking.allow.reset`` gate the topics endpoints;
``admin.listeners`` set to an empty value turns the ``/admin`` endpoints off.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from connect.api.errors import ConfigError

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "RestConfig", "parse_host_port"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8083


@dataclass(frozen=True)
class RestConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    advertised_host: str | None = None
    advertised_port: int | None = None
    #: ``https`` for an ``https://`` listener (``connect.rest.security`` reads its keys).
    scheme: str = "http"
    topic_tracking_enable: bool = True
    topic_tracking_allow_reset: bool = True
    admin_enabled: bool = True
    #: How long ``GET /health`` waits for the herder (Kafka: 10 s).
    health_timeout_s: float = 10.0

    @classmethod
    def from_worker_config(cls, config: Mapping[str, str] | None) -> RestConfig:
        """Parse the REST keys of ``config``; ``ConfigError`` names a bad key."""
        config = config or {}
        host, port, scheme = DEFAULT_HOST, DEFAULT_PORT, "http"
        listeners = config.get("listeners", "").strip()
        if listeners:
            scheme, host, port = _parse_listener(listeners.split(",")[0].strip())
        elif config.get("rest.host.name") or config.get("rest.port"):
            host = config.get("rest.host.name") or DEFAULT_HOST
            port = _port(config.get("rest.port") or str(DEFAULT_PORT), "rest.port")
        advertised_port = config.get("rest.advertised.port")
        return cls(
            host=host,
            port=port,
            scheme=scheme,
            advertised_host=config.get("rest.advertised.host.name") or None,
            advertised_port=_port(advertised_port, "rest.advertised.port")
            if advertised_port else None,
            topic_tracking_enable=_bool(config, "topic.tracking.enable", True),
            topic_tracking_allow_reset=_bool(config, "topic.tracking.allow.reset", True),
            admin_enabled="admin.listeners" not in config
            or bool(config["admin.listeners"].strip()),
        )

    def with_listener(self, host: str, port: int) -> RestConfig:
        """A copy bound to ``host:port`` (the ``--rest`` flag wins over the file)."""
        return replace(self, host=host, port=port)

    def worker_id(self, bound_port: int) -> str:
        """This worker's id as Kafka forms it: the advertised ``host:port``."""
        host = self.advertised_host or self.host
        if host in ("", "0.0.0.0", "::"):
            host = socket.gethostname()
        return f"{host}:{self.advertised_port or bound_port}"


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too); an empty host means every interface."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        raise ConfigError(what, f"expected HOST:PORT, got {text!r}")
    return (host.strip("[]") or "0.0.0.0"), _port(port, what)


def _parse_listener(listener: str) -> tuple[str, str, int]:
    parts = urlsplit(listener)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConfigError("listeners", f"only http:// and https:// listeners are supported, "
                                       f"got {listener!r}")
    return (scheme, *parse_host_port(parts.netloc, "listeners"))


def _port(text: str, key: str) -> int:
    try:
        port = int(text.strip())
    except ValueError:
        raise ConfigError(key, f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(key, f"port {port} is outside 0-65535")
    return port


def _bool(config: Mapping[str, str], key: str, default: bool) -> bool:
    value = config.get(key)
    if value is None or not value.strip():
        return default
    if value.strip().lower() not in ("true", "false"):
        raise ConfigError(key, f"expected true or false, got {value!r}")
    return value.strip().lower() == "true"
