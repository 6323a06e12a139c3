"""Python logging levels under Kafka's names, for ``/admin/loggers`` (KIP-495).

Kafka names log4j levels; Python's differ. The mapping::

    TRACE 5   DEBUG 10   INFO 20   WARN 30 (also WARNING)   ERROR 40
    FATAL 50 (also CRITICAL)   OFF 100 (above everything)   ALL 1

A level is read back as the highest Kafka name at or below it. Setting a namespace sets
that logger and every existing logger below it (``connect`` also sets
``connect.runtime.worker``), as Kafka's ``Loggers.setLevel`` does; ``root`` is the root
logger. ``last_modified`` is the wall-clock ms of the last change made through here.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from connect.api.errors import NotFoundError
from connect.rest.log_text import printable

__all__ = ["ROOT_LOGGER", "LoggerLevels", "level_name", "parse_level"]

ROOT_LOGGER = "root"

_LEVELS = {"ALL": 1, "TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
           "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
           "OFF": logging.CRITICAL * 2}
_ALIASES = {"WARNING": "WARN", "CRITICAL": "FATAL"}
_NAMES_DESCENDING = sorted(((n, v) for n, v in _LEVELS.items() if n != "ALL"),
                           key=lambda item: -item[1])


def parse_level(text: str) -> int:
    """The Python level for a Kafka level name (case-insensitive); ``NotFoundError`` for an
    unknown one (Kafka answers 404 for an invalid level)."""
    name = text.strip().upper()
    name = _ALIASES.get(name, name)
    if name not in _LEVELS:
        raise NotFoundError(f"Invalid log level '{text}'; use one of "
                            f"{', '.join(n for n, _ in reversed(_NAMES_DESCENDING))}")
    return _LEVELS[name]


def level_name(level: int) -> str:
    """Kafka's name for a Python level: the highest name at or below it."""
    for name, value in _NAMES_DESCENDING:
        if level >= value:
            return name
    return "TRACE"


class LoggerLevels:
    """Reads and sets levels of this process's loggers; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_modified: dict[str, int] = {}

    def all_levels(self) -> dict[str, dict[str, Any]]:
        """Loggers with an explicitly set level, plus ``root``, sorted by name."""
        out = {ROOT_LOGGER: self._describe(ROOT_LOGGER, logging.getLogger())}
        for name, logger in sorted(_existing_loggers().items()):
            if logger.level != logging.NOTSET:
                out[name] = self._describe(name, logger)
        return out

    def level(self, name: str) -> dict[str, Any]:
        """``{"level", "last_modified"}``; ``NotFoundError`` for a logger never created."""
        if name == ROOT_LOGGER:
            return self._describe(name, logging.getLogger())
        logger = _existing_loggers().get(name)
        if logger is None:
            raise NotFoundError(f"Logger {name} not found.")
        return self._describe(name, logger)

    def set_level(self, namespace: str, level_text: str) -> list[str]:
        """Set ``namespace`` and its existing descendants; returns their names, sorted."""
        level = parse_level(level_text)
        now = int(time.time() * 1000)
        with self._lock:
            if namespace == ROOT_LOGGER:
                targets = {ROOT_LOGGER: logging.getLogger(), **_existing_loggers()}
            else:
                targets = {name: logger for name, logger in _existing_loggers().items()
                           if name == namespace or name.startswith(namespace + ".")}
                targets[namespace] = logging.getLogger(namespace)
            for name, logger in targets.items():
                logger.setLevel(level)
                self._last_modified[name] = now
        logging.getLogger(__name__).info("set log level of %s (%d logger%s) to %s",
                                         printable(namespace), len(targets),
                                         "" if len(targets) == 1 else "s", level_name(level))
        return sorted(targets)

    def _describe(self, name: str, logger: logging.Logger) -> dict[str, Any]:
        return {"level": level_name(logger.getEffectiveLevel()),
                "last_modified": self._last_modified.get(name)}


def _existing_loggers() -> dict[str, logging.Logger]:
    """Loggers created so far (placeholders for never-created parents excluded)."""
    manager = logging.Logger.manager
    return {name: logger for name, logger in list(manager.loggerDict.items())
            if isinstance(logger, logging.Logger)}
