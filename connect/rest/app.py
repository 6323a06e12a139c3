"""``create_app(herder, config)``: the Flask app serving Kafka Connect's REST API.

The app is a thin wrapper over one ``Herder``: blueprints parse the request, call one
herder method and serialise what it returns; ``errors`` turns exceptions into Kafka's
``{"error_code", "message"}`` bodies; ``forwarding`` relays requests a distributed herder
says must run on another worker. The herder and the parsed ``RestConfig`` live in
``app.extensions`` (never in module globals), so tests build as many apps as they like.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from flask import Flask

from connect.rest import connectors, internal, loggers, offsets, openapi, plugins, root, tasks
from connect.rest.config import RestConfig
from connect.rest.errors import register_error_handlers
from connect.rest.forwarding import register_forwarding
from connect.rest.logger_levels import LoggerLevels
from connect.rest.metrics import ConnectCollector
from connect.rest.params import (
    CLIENT_TLS_KEY,
    HERDER_KEY,
    MAX_BODY_BYTES,
    REST_CONFIG_KEY,
    TLS_FAILURE_HOOK_KEY,
)
from connect.rest.security import RestSecurity
from connect.runtime.herder import Herder
from core.http.access_log import AccessLog
from core.http.observability import ObservedApp, new_registry

__all__ = ["METRICS_REGISTRY_KEY", "create_app"]

#: app.extensions key of the app's prometheus-client registry (its /metrics).
METRICS_REGISTRY_KEY = "ferry.metrics_registry"


def create_app(herder: Herder,
               config: RestConfig | Mapping[str, str] | None = None,
               security: RestSecurity | None = None) -> Flask:
    """The REST app over ``herder``. ``config`` is a ``RestConfig`` or the worker config
    with Kafka's keys (``topic.tracking.enable``, ``admin.listeners``, ...); ``security``
    (HTTPS client settings, Basic auth) is read from that worker config when it is one."""
    rest_config = (config if isinstance(config, RestConfig)
                   else RestConfig.from_worker_config(config))
    if security is None:
        security = (RestSecurity() if isinstance(config, RestConfig)
                    else RestSecurity.from_worker_config(config))
    app = Flask("connect.rest")
    app.json.sort_keys = False  # type: ignore[attr-defined]  # keep Kafka's field order
    app.url_map.strict_slashes = False  # "/connectors/" answers like "/connectors"
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES  # larger bodies: 413, unread
    app.extensions[HERDER_KEY] = herder
    app.extensions[REST_CONFIG_KEY] = rest_config
    app.extensions[CLIENT_TLS_KEY] = security.client_context()
    register_error_handlers(app)
    register_forwarding(app)
    for blueprint in (root.bp, connectors.bp, tasks.bp, offsets.bp, plugins.bp, openapi.bp):
        app.register_blueprint(blueprint)
    if isinstance(herder, internal.InternalRequestHerder):
        # Worker-to-worker endpoints exist only where a herder serves them (distributed).
        app.register_blueprint(internal.bp)
    if rest_config.admin_enabled:
        app.extensions[loggers.LOGGER_LEVELS_KEY] = LoggerLevels()
        app.register_blueprint(loggers.bp)
    # /metrics through the shared HTTP layer; /health stays the herder's own (root.py).
    registry = new_registry()
    registry.register(ConnectCollector(herder))
    app.extensions[METRICS_REGISTRY_KEY] = registry
    # Authentication in front of everything but the access log, /metrics included.
    guarded, app.extensions[TLS_FAILURE_HOOK_KEY] = security.wrap(
        ObservedApp(registry, None, app.wsgi_app), registry)
    app.wsgi_app = AccessLog(  # type: ignore[method-assign]
        guarded, logging.getLogger("connect.rest.access"))
    return app
