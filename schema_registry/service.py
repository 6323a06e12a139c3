"""``RegistryService``: one Schema Registry instance, for ``ferry registry`` and embedders.

::

    from schema_registry.service import RegistryService

    service = RegistryService("kafka://127.0.0.1:9092", listen="127.0.0.1:8081")
    service.start(wait_ready=30)      # returns once the REST API listens (and, here, is ready)
    print(service.url)                # http://127.0.0.1:8081
    ...
    service.stop()

``backend`` is a log URL (the service opens and later closes it) or an open ``LogBackend``
(the caller keeps owning it: ``ferry up`` shares its embedded log this way). ``config`` is
a ``RegistryConfig`` or Confluent-named properties (see ``schema_registry.config``);
``listen`` overrides its listener (port 0 picks a free port).

What runs: the ``_schemas`` reader thread (``SchemaStore``), the leader election thread
(``LeaderElector``) and waitress serving the REST app. Several services on the same log
(and group id) form one registry cluster: one leader writes, the others forward writes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from prometheus_client import CollectorRegistry

from core.backends import LogBackend, open_backend
from core.http.access_log import AccessLog
from core.http.auth import BasicAuth, failure_counter, tls_failure_hook
from core.http.observability import ObservedApp, new_registry
from schema_registry.cluster import WriteRouter
from schema_registry.config import RegistryConfig, parse_host_port
from schema_registry.dek import DekRegistry, DekState, DekStore
from schema_registry.election import Identity, LeaderElector
from schema_registry.errors import RegistryConfigError
from schema_registry.metrics import RegistryCollector, RequestMetrics, registry_health
from schema_registry.registry import SchemaRegistry
from schema_registry.rest import RestContext, create_app
from schema_registry.server import RegistryServer, bind_listener
from schema_registry.state import RegistryState
from schema_registry.store import SchemaStore

__all__ = ["RegistryService"]

log = logging.getLogger(__name__)

#: The whole of ``stop()``: requests still running after their share of it are abandoned
#: (their threads are daemons), so a request stuck on the log never holds a SIGTERM up.
STOP_TIMEOUT_S = 5.0
#: The share of ``stop()``'s time that requests in progress get to finish.
REQUEST_GRACE_SHARE = 0.6
#: The least each later step (leave the group, stop the reader) gets, however long the
#: requests took.
MIN_STEP_S = 0.5


class RegistryService:
    """One registry instance: reader, election and REST server. See the module docstring.

    Lifecycle: 1. construct (nothing runs); 2. ``start()``; 3. ``stop()`` (idempotent; also
    on leaving a ``with`` block). ``start`` raises ``RegistryConfigError`` for bad settings
    or an unusable ``_schemas`` topic, ``OSError`` if the port cannot be bound and
    ``BackendError`` if the log URL cannot be opened; a log that is merely unreachable is
    retried in the background while the API answers 503, and a misconfigured topic shows
    as ``fatal_error``.
    """

    def __init__(self, backend: LogBackend | str, *, listen: str | tuple[str, int] | None = None,
                 config: RegistryConfig | Mapping[str, Any] | None = None) -> None:
        cfg = config if isinstance(config, RegistryConfig) else \
            RegistryConfig.from_props(config or {})
        if listen is not None:
            host, port = parse_host_port(listen) if isinstance(listen, str) else listen
            cfg = cfg.with_listener(host, port)
        self.config = cfg
        self._backend_arg = backend
        self.backend: LogBackend | None = None
        self._owns_backend = isinstance(backend, str)
        self.state = RegistryState()
        self.store: SchemaStore | None = None
        self.dek_store: DekStore | None = None
        self.registry: SchemaRegistry | None = None
        self.elector: LeaderElector | None = None
        self.router: WriteRouter | None = None
        self.server: RegistryServer | None = None
        self.identity: Identity | None = None
        self.metrics_registry: CollectorRegistry | None = None
        self._started = False
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle

    def start(self, wait_ready: float | None = None) -> None:
        """Bind, start reading the topic, join the election and serve; returns at once.
        With ``wait_ready``, also wait up to that many seconds until the topic has been
        read (returns either way; see ``ready``), raising ``RegistryConfigError`` if the
        topic turned out to be unusable."""
        if self._started:
            raise RuntimeError("RegistryService.start() called twice")
        self._started = True
        cfg = self.config
        sock = bind_listener(cfg.host, cfg.port)
        try:
            self._build(sock)
        except BaseException:
            sock.close()
            self._close_backend()
            raise
        assert self.store and self.elector and self.server and self.dek_store
        self.store.start()
        self.dek_store.start()
        self.elector.start()
        self.server.start()
        log.info("Schema Registry %s listening on %s (log %s, topic %s, group %s)",
                 self.identity.url if self.identity else "?", self.server.url,
                 getattr(self.backend, "url", "?"), cfg.topic, cfg.group_id)
        if wait_ready is not None:
            self.wait_ready(wait_ready)
            if self.fatal_error is not None:
                raise self.fatal_error

    def _build(self, sock: Any) -> None:
        cfg = self.config
        if isinstance(self._backend_arg, str):
            timeout = str(cfg.store_timeout_ms)
            self.backend = open_backend(self._backend_arg, {
                "default.api.timeout.ms": timeout, "delivery.timeout.ms": timeout,
                "request.timeout.ms": timeout})
        else:
            self.backend = self._backend_arg
        host, port = cfg.advertised(sock.getsockname()[1])
        self.identity = Identity(host, port, cfg.scheme, cfg.leader_eligible)
        store_timeout = cfg.store_timeout_ms / 1000
        self.store = SchemaStore(self.backend, self.state, topic=cfg.topic,
                                 timeout_s=store_timeout,
                                 replication_factor=cfg.replication_factor,
                                 skip_validation=cfg.skip_topic_validation)
        self.dek_store = DekStore(self.backend, DekState(), topic=cfg.dek_topic,
                                  timeout_s=store_timeout,
                                  replication_factor=cfg.replication_factor,
                                  skip_validation=cfg.skip_topic_validation)
        self.registry = SchemaRegistry(self.state, self.store,
                                       default_compatibility=cfg.default_compatibility,
                                       mode_mutable=cfg.mode_mutable)
        self.elector = LeaderElector(self.backend, self.identity, group_id=cfg.group_id,
                                     session_timeout_ms=cfg.session_timeout_ms,
                                     heartbeat_interval_ms=cfg.heartbeat_interval_ms,
                                     rebalance_timeout_ms=cfg.rebalance_timeout_ms)
        self.router = WriteRouter(self.store, self.elector, timeout_s=store_timeout)
        self.elector.add_listener(self.router.on_leadership)
        context = RestContext(self.registry, self.router, self.store, self.identity.url,
                              cluster_id=cfg.group_id,
                              forward_timeout_s=cfg.forward_timeout_ms / 1000,
                              dek=DekRegistry(self.dek_store.state,  # type: ignore[arg-type]
                                              self.dek_store),
                              authorizer=cfg.security.authorizer,
                              client_tls=cfg.security.client_context())
        app = create_app(context)
        # /metrics and /health through the shared HTTP layer, outside the response cache
        # and the readiness wait, so a probe is answered at once during startup.
        self.metrics_registry = new_registry()
        self.metrics_registry.register(RegistryCollector(self))
        app.wsgi_app = RequestMetrics(  # type: ignore[method-assign]
            app.wsgi_app, app.url_map, self.metrics_registry)
        served: Any = ObservedApp(self.metrics_registry, lambda: registry_health(self), app)
        security = cfg.security
        failures = failure_counter(self.metrics_registry)
        if security.users is not None:
            # In front of everything (the response cache too: its answers are per user).
            served = BasicAuth(served, security.users, realm=security.realm,
                               service="Schema Registry", registry=self.metrics_registry,
                               allowed_roles=security.roles, limiter=security.limiter,
                               failures=failures,
                               bypass=(lambda environ: environ.get("PATH_INFO", "")
                                       in security.skip_paths) if security.skip_paths
                               else None)
        self.server = RegistryServer(
            AccessLog(served, logging.getLogger("schema_registry.rest.access")), sock,
            tls=security.server_context(),
            on_tls_failure=tls_failure_hook(failures, "Schema Registry"))

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop serving, leave the group (another instance takes over at once), stop the
        readers (``_schemas`` and the DEK Registry's topic) and close the log if this
        service opened it; all within about ``timeout`` seconds (each later step gets at
        least ``MIN_STEP_S``)."""
        if self._stopped or not self._started:
            self._stopped = True
            return
        self._stopped = True
        deadline = time.monotonic() + timeout

        def remaining() -> float:
            return max(deadline - time.monotonic(), MIN_STEP_S)

        if self.server is not None:
            self.server.stop(timeout * REQUEST_GRACE_SHARE)
        if self.elector is not None:
            self.elector.stop(remaining())
        if self.store is not None:
            self.store.stop(remaining())
        if self.dek_store is not None:
            self.dek_store.stop(remaining())
        self._close_backend()
        log.info("Schema Registry on %s stopped", self.url)

    def _close_backend(self) -> None:
        if self._owns_backend and self.backend is not None:
            self.backend.close()

    def __enter__(self) -> RegistryService:
        if not self._started:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ state

    @property
    def url(self) -> str:
        """Where the REST API listens, e.g. ``http://127.0.0.1:8081``."""
        if self.server is None:
            host, port = self.config.host, self.config.port
            scheme = "https" if self.config.security.https else "http"
            return f"{scheme}://{host}:{port}"
        return self.server.url

    @property
    def ready(self) -> bool:
        """True once the ``_schemas`` topic has been read to its end."""
        return self.store is not None and self.store.ready

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``ready``."""
        return self.store is not None and self.store.wait_ready(timeout)

    @property
    def fatal_error(self) -> RegistryConfigError | None:
        """Set when the ``_schemas`` topic is unusable (the instance will never be ready)."""
        return None if self.store is None else self.store.fatal_error

    @property
    def is_leader(self) -> bool:
        """True while this instance is the elected writer."""
        current = self.elector.current if self.elector is not None else None
        return current is not None and current.is_self
