"""``/admin/loggers`` (KIP-495, KIP-976): read and change this worker's log levels.

A logger name is dot-separated parts of letters, digits, ``_``, ``$``, ``-`` and ``:``
(Python module paths and Java class names); anything else (a line break, a space, an
empty part) is a 400 before it reaches ``logging``.

``scope=cluster`` is accepted: in standalone mode the cluster is this worker, so it is
applied here and answered with 204 as Kafka does; an unknown scope falls back to
``worker`` with a warning, as in Kafka.
"""

from __future__ import annotations

import logging
import re

from flask import Blueprint, Response, current_app, jsonify, request

from connect.rest.errors import RestError
from connect.rest.log_text import printable
from connect.rest.logger_levels import LoggerLevels
from connect.rest.params import json_body

__all__ = ["LOGGER_LEVELS_KEY", "bp"]

log = logging.getLogger(__name__)

LOGGER_LEVELS_KEY = "ferry.connect.logger_levels"

bp = Blueprint("loggers", __name__, url_prefix="/admin/loggers")


_LOGGER_NAME = re.compile(r"[\w$:-]+(?:\.[\w$:-]+)*")


def _checked(logger: str) -> str:
    if len(logger) > 255 or not _LOGGER_NAME.fullmatch(logger) or not logger.isprintable():
        raise RestError(400, f"Invalid logger name '{printable(logger, 80)}': a logger name "
                             "is dot-separated parts of letters, digits, '_', '$', '-' and "
                             "':' (at most 255 characters)")
    return logger


def _levels() -> LoggerLevels:
    levels: LoggerLevels = current_app.extensions[LOGGER_LEVELS_KEY]
    return levels


@bp.get("")
def list_loggers() -> Response:
    return jsonify(_levels().all_levels())


@bp.get("/<logger>")
def get_logger(logger: str) -> Response:
    return jsonify(_levels().level(_checked(logger)))


@bp.put("/<logger>")
def set_logger(logger: str) -> Response | tuple[str, int]:
    _checked(logger)
    body = json_body()
    level = body.get("level") if isinstance(body, dict) else None
    if not isinstance(level, str):
        raise RestError(400, 'Desired log level must be given as {"level": "DEBUG"}')
    scope = request.args.get("scope", "worker").strip().lower()
    if scope not in ("worker", "cluster"):
        log.warning("Received invalid scope '%s' for logger %s; defaulting to worker",
                    printable(scope, 80), printable(logger))
        scope = "worker"
    affected = _levels().set_level(logger, level)
    if scope == "cluster":
        return "", 204
    return jsonify(affected)
