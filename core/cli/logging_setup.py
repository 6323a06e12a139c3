"""Logging for the ``ferry`` process: terse warnings for console tools, INFO for servers.

Level and format come from ``--log-level``/``--log-format`` (global or after the
subcommand), else ``$FERRY_LOG_LEVEL``/``$FERRY_LOG_FORMAT``, else the command's default:
WARNING for console tools, INFO for servers, as text. ``json`` writes one JSON object per
line (``time``, ``level``, ``logger``, ``message``, ``exception``), for log shippers.
Logs always go to stderr, so a console tool's stdout stays pure data.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from datetime import UTC, datetime

from core.cli.errors import CliError

__all__ = [
    "LOG_FORMATS",
    "LOG_FORMAT_ENV_VAR",
    "LOG_LEVELS",
    "LOG_LEVEL_ENV_VAR",
    "JsonFormatter",
    "add_logging_options",
    "apply_logging_options",
    "configure_console_logging",
    "configure_server_logging",
    "logging_summary",
]

LOG_LEVEL_ENV_VAR = "FERRY_LOG_LEVEL"
LOG_FORMAT_ENV_VAR = "FERRY_LOG_FORMAT"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
LOG_FORMATS = ("text", "json")

_TEXT_CONSOLE = "ferry: %(levelname)s: %(message)s"
_TEXT_SERVER = "%(asctime)s %(levelname)-5s %(name)s: %(message)s"

# What the user chose (None: the command's default); set by ``apply_logging_options``.
_chosen_level: int | None = None
_chosen_format = "text"
_installed: logging.Handler | None = None


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
    ``message`` and, for an exception, ``exception`` (its traceback as one string)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC)
                            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _level_arg(text: str) -> str:
    value = text.strip().lower()
    if value not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"invalid level {text!r}: choose one of {', '.join(LOG_LEVELS)}")
    return value


def _format_arg(text: str) -> str:
    value = text.strip().lower()
    if value not in LOG_FORMATS:
        raise argparse.ArgumentTypeError(
            f"invalid format {text!r}: choose one of {', '.join(LOG_FORMATS)}")
    return value


def add_logging_options(parser: argparse.ArgumentParser) -> None:
    """Accept ``--log-level`` and ``--log-format`` on ``parser``. Defaults are SUPPRESS so a
    value given before the subcommand survives a subparser that was given none."""
    with contextlib.suppress(argparse.ArgumentError):
        parser.add_argument("--log-level", metavar="LEVEL", type=_level_arg,
                            default=argparse.SUPPRESS,
                            help=f"debug, info, warning or error (default: "
                                 f"${LOG_LEVEL_ENV_VAR}, else warning for console tools and "
                                 "info for servers)")
        parser.add_argument("--log-format", metavar="FORMAT", type=_format_arg,
                            default=argparse.SUPPRESS,
                            help=f"text or json, one object per line (default: "
                                 f"${LOG_FORMAT_ENV_VAR}, else text); logs go to stderr")


def apply_logging_options(args: argparse.Namespace) -> None:
    """Record the level and format from ``args`` or the environment; ``CliError`` for a bad
    environment value (flags are checked by the parser)."""
    global _chosen_level, _chosen_format
    level = getattr(args, "log_level", None) or _from_env(LOG_LEVEL_ENV_VAR, LOG_LEVELS)
    fmt = getattr(args, "log_format", None) or _from_env(LOG_FORMAT_ENV_VAR, LOG_FORMATS)
    _chosen_level = getattr(logging, level.upper()) if level else None
    _chosen_format = fmt or "text"


def _from_env(name: str, allowed: tuple[str, ...]) -> str | None:
    raw = os.environ.get(name, "")
    if not raw.strip():
        return None
    value = raw.strip().lower()
    if value not in allowed:
        raise CliError(f"${name} is {raw!r}: choose one of {', '.join(allowed)}")
    return value


def _install(level: int, text_format: str, *, force: bool) -> None:
    global _installed
    root = logging.getLogger()
    if not force and any(h is not _installed for h in root.handlers):
        # Configured by someone else (``main`` called in-process by a test or an
        # embedder): keep their handlers, apply only a level the user chose.
        if _chosen_level is not None:
            root.setLevel(_chosen_level)
        return
    handler = logging.StreamHandler(sys.stderr)
    if _chosen_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(text_format, datefmt="%Y-%m-%d %H:%M:%S"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    _installed = handler


def configure_console_logging() -> None:
    """Warnings and errors only (unless chosen otherwise), one line each, so tool output
    stays clean. Leaves a configuration made outside ``ferry`` alone."""
    _install(_chosen_level if _chosen_level is not None else logging.WARNING, _TEXT_CONSOLE,
             force=False)


def configure_server_logging(level: int = logging.INFO) -> None:
    """Timestamped lines on stderr for long-running commands (``ferry up``); ``level``
    unless the user chose one."""
    _install(_chosen_level if _chosen_level is not None else level, _TEXT_SERVER, force=True)


def logging_summary() -> str:
    """Where logs go and how, for a server's ready line: ``stderr (INFO, text)``."""
    level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    return f"stderr ({level}, {_chosen_format})"
