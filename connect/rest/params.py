"""Request parsing shared by the blueprints: the herder, JSON bodies, query booleans.

Every parser raises ``RestError(400, ...)`` naming what is wrong, so routes stay a few
lines: parse, call one ``Herder`` method, serialise.
"""

from __future__ import annotations

import json
from typing import Any

from flask import current_app, request

from connect.rest.config import RestConfig
from connect.rest.errors import RestError
from connect.runtime.herder import Herder

__all__ = [
    "CLIENT_TLS_KEY",
    "HERDER_KEY",
    "MAX_BODY_BYTES",
    "REST_CONFIG_KEY",
    "TLS_FAILURE_HOOK_KEY",
    "config_map",
    "current_herder",
    "json_body",
    "query_bool",
    "rest_config",
]

#: Bodies larger than this are answered 413 before they are read (a connector config is a
#: few kilobytes; offsets for many partitions stay far below it).
MAX_BODY_BYTES = 16 * 1024 * 1024

HERDER_KEY = "ferry.connect.herder"
REST_CONFIG_KEY = "ferry.connect.rest_config"
#: The ``ssl.SSLContext`` (or None) of requests this worker forwards to other workers.
CLIENT_TLS_KEY = "ferry.connect.client_tls"
#: What the HTTPS listener calls on a failed handshake (counts it in this app's metrics).
TLS_FAILURE_HOOK_KEY = "ferry.connect.tls_failure_hook"


def current_herder() -> Herder:
    """The herder ``create_app`` bound to the running app."""
    herder: Herder = current_app.extensions[HERDER_KEY]
    return herder


def rest_config() -> RestConfig:
    config: RestConfig = current_app.extensions[REST_CONFIG_KEY]
    return config


def json_body() -> Any:
    """The request body parsed as JSON, whatever the Content-Type (``curl -d`` sends
    form encoding by default). An empty or malformed body is a 400."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        raise RestError(400, "Request body is required: send a JSON document")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RestError(400, f"Malformed JSON in request body: {exc}") from None
    except RecursionError:  # [[[[...: deeper than the parser's stack, never a config
        raise RestError(400, "Malformed JSON in request body: nested too deeply") from None


def query_bool(name: str, default: bool) -> bool:
    """A ``true``/``false`` query parameter, case-insensitive; anything else is a 400."""
    value = request.args.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise RestError(400, f"Query parameter {name} must be true or false, not {value!r}")


def config_map(body: Any, what: str, *, allow_null: bool = False) -> dict[str, Any]:
    """A flat JSON object of config values as strings. Numbers and booleans are accepted
    and turned into their Kafka spelling (``1``, ``true``), as Kafka's JSON mapper does;
    ``null`` only where ``allow_null`` (a PATCH deleting the key)."""
    if not isinstance(body, dict):
        raise RestError(400, f"{what} must be a JSON object of string values")
    out: dict[str, Any] = {}
    for key, value in body.items():
        if value is None:
            if not allow_null:
                raise RestError(400, f"{what}: the value of {key!r} must not be null")
            out[key] = None
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            raise RestError(400, f"{what}: the value of {key!r} must be a string, "
                                 f"not a JSON {type(value).__name__}")
    return out
