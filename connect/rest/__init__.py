"""Kafka Connect's REST API over a ``Herder``: a Flask app factory and a waitress server.

``create_app(herder, config)`` builds the app (one blueprint per resource: ``root``,
``connectors``, ``tasks``, ``offsets``, ``plugins``, ``loggers``, ``openapi``);
``RestServer`` serves it on a thread with a bounded ``stop()``.
"""

from __future__ import annotations

from connect.rest.app import create_app
from connect.rest.config import RestConfig
from connect.rest.errors import RestError
from connect.rest.server import RestServer, bind_listener

__all__ = ["RestConfig", "RestError", "RestServer", "bind_listener", "create_app"]
