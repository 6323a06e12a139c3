"""``GET /`` (the worker's ServerInfo) and ``GET /health`` (KIP-1017)."""

from __future__ import annotations

import logging
import threading

from flask import Blueprint, Response, jsonify

from connect.rest.params import current_herder, rest_config
from connect.runtime.herder import Herder

__all__ = ["bp"]

log = logging.getLogger(__name__)

bp = Blueprint("root", __name__)

_STATUS_CODES = {"healthy": 200, "starting": 503}


@bp.get("/")
def server_info() -> Response:
    return jsonify(current_herder().server_info().to_json())


@bp.get("/health")
def health() -> tuple[Response, int]:
    status, message = _bounded_health(current_herder(), rest_config().health_timeout_s)
    return jsonify({"status": status, "message": message}), _STATUS_CODES.get(status, 500)


def _bounded_health(herder: Herder, timeout: float) -> tuple[str, str]:
    """``herder.health()``, or ``unhealthy`` if it fails or does not answer in time (a
    herder stuck in a connector call must not hang the health check too)."""
    result: list[tuple[str, str]] = []
    failure: list[BaseException] = []

    def call() -> None:
        try:
            result.append(herder.health())
        except Exception as exc:  # reported below as an unhealthy worker
            failure.append(exc)

    thread = threading.Thread(target=call, name="connect-rest-health", daemon=True)
    thread.start()
    thread.join(timeout)
    if result:
        return result[0]
    if failure:
        log.warning("health check failed: %s", failure[0], exc_info=failure[0])
        return "unhealthy", f"Worker health check failed: {failure[0]}"
    log.warning("health check: the herder did not answer within %.0f s", timeout)
    return ("unhealthy", "Worker was unable to handle this request and may be unable to "
                         f"handle other requests (no answer within {timeout:.0f} s)")
