"""Exceptions to HTTP responses: every error leaves as ``{"error_code", "message"}``.

The mapping is Kafka Connect's (``ConnectExceptionMapper``)::

    RestError(status)             that status (raised by this package for bad requests)
    NotFoundError                 404
    AlreadyExistsError            409
    RebalanceInProgressError      409
    BadRequestError               400; with ``config_infos`` the message lists each bad key
    ConfigError                   400
    werkzeug HTTPException        its status (unknown route 404, wrong method 405, ...)
    anything else                 500, logged with its traceback

``error_code`` always equals the HTTP status, as it does in Kafka in practice.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from connect.api.errors import AlreadyExistsError, ConfigError, ConnectError, NotFoundError
from connect.rest.log_text import printable
from connect.runtime.errors import BadRequestError, RebalanceInProgressError

__all__ = ["RestError", "error_response", "invalid_config_message", "register_error_handlers"]

log = logging.getLogger(__name__)

_STATUS_BY_ERROR: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (RebalanceInProgressError, 409),
    (BadRequestError, 400),
    (ConfigError, 400),
)


class RestError(Exception):
    """A request the REST layer itself rejects (Kafka's ``ConnectRestException``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> tuple[Response, int]:
    """The JSON error body Kafka Connect answers with."""
    return jsonify({"error_code": status, "message": message}), status


def invalid_config_message(config_infos: dict[str, Any]) -> str:
    """Kafka's "Connector configuration is invalid ..." message, one line per error, each
    naming its key (Kafka prints the bare error, which does not always name the key)."""
    lines = []
    for info in config_infos.get("configs", []):
        value = info.get("value") or {}
        key = value.get("name") or (info.get("definition") or {}).get("name") or "?"
        for error in value.get("errors") or []:
            lines.append(error if f'"{key}"' in error or error.startswith(key)
                         else f"{key}: {error}")
    plugin = config_infos.get("name") or "{connectorType}"
    return (f"Connector configuration is invalid and contains the following {len(lines)} "
            "error(s):\n" + "\n".join(lines) + "\nYou can also find the above list of errors "
            f"at the endpoint `/connector-plugins/{plugin}/config/validate`")


def register_error_handlers(app: Flask) -> None:
    """Install the handlers that turn every exception into a JSON error response."""
    app.register_error_handler(RestError, _rest_error)
    app.register_error_handler(ConnectError, _connect_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


def _rest_error(exc: RestError) -> tuple[Response, int]:
    return error_response(exc.status, exc.message)


def _connect_error(exc: ConnectError) -> tuple[Response, int]:
    for error_type, status in _STATUS_BY_ERROR:
        if isinstance(exc, error_type):
            message = str(exc) or type(exc).__name__
            infos = getattr(exc, "config_infos", None)
            if isinstance(exc, BadRequestError) and infos and infos.get("error_count"):
                message = invalid_config_message(infos)
            return error_response(status, message)
    return _unexpected_error(exc)


def _http_error(exc: HTTPException) -> tuple[Response, int]:
    status = exc.code or 500
    if status == 404:
        message = f"HTTP 404 Not Found: no endpoint {request.method} {request.path}"
    elif isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(sorted(exc.valid_methods or ()))
        message = (f"HTTP 405 Method Not Allowed: {request.path} accepts {allowed}, "
                   f"not {request.method}")
    else:
        message = f"HTTP {status} {exc.name}: {exc.description}"
    response, status = error_response(status, message)
    if isinstance(exc, MethodNotAllowed) and exc.valid_methods:
        response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
    return response, status


def _unexpected_error(exc: Exception) -> tuple[Response, int]:
    log.error("Uncaught exception in REST call to %s %s", printable(request.method),
              printable(request.path), exc_info=exc)
    return error_response(500, f"{type(exc).__name__}: {exc}" if str(exc)
                          else type(exc).__name__)
