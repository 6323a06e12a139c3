"""The registry's ``/metrics`` and ``/health`` (through ``core.http.observability``).

Requests are counted per endpoint (the Flask endpoint the path routes to, e.g.
``subjects.register``, as Confluent names its per-endpoint metrics), method and status in
``ferry_registry_requests_total`` with their time in
``ferry_registry_request_duration_seconds``; they are counted outside the response cache,
so cached answers count too. Schemas, subjects, compatibility failures and leadership are
read at scrape time. ``/health`` follows KIP-1017: ``starting`` until the ``_schemas``
topic is read to its end, ``unhealthy`` when that topic is unusable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map

from core.http.observability import Health

if TYPE_CHECKING:
    from schema_registry.service import RegistryService

__all__ = ["RegistryCollector", "RequestMetrics", "registry_health"]

_LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                      2.5, 5.0, 10.0)


class RequestMetrics:
    """WSGI middleware counting every request by endpoint, method and status code."""

    def __init__(self, app: Callable[..., Iterable[bytes]], url_map: Map,
                 registry: CollectorRegistry) -> None:
        self._app = app
        self._urls = url_map.bind("localhost")
        self._requests = Counter("ferry_registry_requests", "REST requests answered",
                                 ["endpoint", "method", "code"], registry=registry)
        self._seconds = Histogram("ferry_registry_request_duration_seconds",
                                  "Time to answer a REST request", ["endpoint", "method"],
                                  buckets=_LATENCY_BUCKETS_S, registry=registry)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        started = time.perf_counter()
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            endpoint = self._urls.match(environ.get("PATH_INFO", "/"), method)[0]
        except HTTPException:  # 404 or 405: one label for every unknown path
            endpoint = "unknown"
        status: list[str] = []

        def record_status(line: str, headers: Any, exc_info: Any = None) -> Any:
            status[:] = [line.split(" ", 1)[0]]
            return start_response(line, headers, exc_info)

        try:
            return self._app(environ, record_status)
        finally:
            self._requests.labels(endpoint, method, status[0] if status else "500").inc()
            self._seconds.labels(endpoint, method).observe(time.perf_counter() - started)


class RegistryCollector(Collector):
    """Schemas, subjects, compatibility failures and leadership of one instance."""

    def __init__(self, service: RegistryService) -> None:
        self._service = service

    def collect(self) -> Iterator[Any]:
        service = self._service
        registry = service.registry
        if registry is not None:
            state = registry.state
            live = [v for v in state.all_versions() if not v.deleted]
            yield GaugeMetricFamily("ferry_registry_subjects", "Subjects with a live version",
                                    value=len({v.subject for v in live}))
            yield GaugeMetricFamily("ferry_registry_schemas",
                                    "Distinct schemas (ids) used by live versions",
                                    value=len({v.id for v in live}))
            yield GaugeMetricFamily("ferry_registry_max_schema_id", "Highest schema id",
                                    value=state.max_id)
            failures = CounterMetricFamily(
                "ferry_registry_compatibility_failures",
                "Incompatible schemas: refused registrations and failed checks",
                labels=["operation"])
            for operation, count in sorted(registry.compatibility_failures.items()):
                failures.add_metric([operation], count)
            yield failures
        yield GaugeMetricFamily("ferry_registry_is_leader",
                                "1 while this instance is the elected writer",
                                value=1 if service.is_leader else 0)
        yield GaugeMetricFamily("ferry_registry_ready",
                                "1 once the schemas topic has been read to its end",
                                value=1 if service.ready else 0)


def registry_health(service: RegistryService) -> Health:
    """KIP-1017's states for the registry."""
    fatal = service.fatal_error
    if fatal is not None:
        return Health.unhealthy(f"the schemas topic is unusable: {fatal}")
    if not service.ready:
        problem = service.store.problem if service.store is not None else "not started"
        return Health.starting(f"reading the schemas topic: {problem}")
    return Health.healthy("Schema Registry has read the schemas topic and serves requests.")
