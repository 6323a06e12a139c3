"""``/metrics`` and ``/health`` for every service, in front of its own WSGI app.

``/metrics`` is prometheus-client's exposition of a ``CollectorRegistry``: the Prometheus
text format, or OpenMetrics when the scraper's ``Accept`` asks for it. ``/health`` follows
KIP-1017 (Connect's ``GET /health``): 200 ``healthy``, 503 ``starting`` before startup is
done, 500 ``unhealthy`` with the reason, as a JSON body ``{"status", "message"}``.
``/health/live`` answers 200 while the process serves HTTP at all (a liveness probe).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, disable_created_metrics
from prometheus_client.exposition import choose_encoder

__all__ = ["Health", "HealthCheck", "ObservedApp", "new_registry"]

# ``x_created`` series double every counter's series count for no dashboard's benefit.
disable_created_metrics()

HEALTHY, STARTING, UNHEALTHY = "healthy", "starting", "unhealthy"
_STATUS_LINES = {HEALTHY: "200 OK", STARTING: "503 Service Unavailable",
                 UNHEALTHY: "500 Internal Server Error"}


@dataclass(frozen=True)
class Health:
    """One of KIP-1017's three states and a message saying why."""

    status: str
    message: str

    @classmethod
    def healthy(cls, message: str = "ready to handle requests") -> Health:
        return cls(HEALTHY, message)

    @classmethod
    def starting(cls, message: str) -> Health:
        return cls(STARTING, message)

    @classmethod
    def unhealthy(cls, message: str) -> Health:
        return cls(UNHEALTHY, message)


HealthCheck = Callable[[], Health]


def new_registry() -> CollectorRegistry:
    """A registry of this service's own collectors only (never the process-global one, so
    two services in one process, as under ``ferry up``, do not export each other's)."""
    return CollectorRegistry(auto_describe=False)


class ObservedApp:
    """WSGI: ``/metrics`` and ``/health`` here, every other path to ``app`` (None: 404).
    With ``health`` None the app answers ``/health`` itself (Connect's herder check)."""

    def __init__(self, registry: CollectorRegistry, health: HealthCheck | None,
                 app: Callable[..., Iterable[bytes]] | None = None) -> None:
        self.registry = registry
        self.health = health
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path == "/metrics" or (self.health is not None
                                  and path in ("/health", "/health/live")):
            if method not in ("GET", "HEAD"):
                return _json(start_response, "405 Method Not Allowed",
                             {"error_code": 405, "message": f"{method} is not allowed on "
                                                            f"{path}; use GET"})
            if path == "/metrics":
                return self._metrics(environ, start_response)
            if path == "/health/live":
                return _json(start_response, "200 OK", {"status": "alive"})
            return self._health(start_response)
        if self._app is None:
            return _json(start_response, "404 Not Found",
                         {"error_code": 404, "message": f"no resource at {path}; this port "
                                                        "serves /metrics and /health"})
        return self._app(environ, start_response)

    def _metrics(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        body = encoder(self.registry)
        start_response("200 OK", [("Content-Type", content_type),
                                  ("Content-Length", str(len(body)))])
        return [body]

    def _health(self, start_response: Callable[..., Any]) -> Iterable[bytes]:
        assert self.health is not None
        try:
            state = self.health()
        except Exception as exc:  # a failing check is itself the answer
            state = Health.unhealthy(f"health check failed: {type(exc).__name__}: {exc}")
        return _json(start_response, _STATUS_LINES[state.status],
                     {"status": state.status, "message": state.message})


def _json(start_response: Callable[..., Any], status: str, body: dict[str, Any]
          ) -> Iterable[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data)))])
    return [data]
