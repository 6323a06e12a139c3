"""Logging for the ``ferry`` process: terse warnings for console tools, INFO for servers.

Level and format come from ``--log-level``/``--log-format`` (global or after the
subcommand), else ``$FERRY_LOG_LEVEL``/``$FERRY_LOG_FORMAT``, else the command's default:
WARNING for console tools, INFO for servers, as text. A level may name loggers too:
``info,core.broker=debug,waitress=warning`` (the bare level is the root's). ``json`` writes
one JSON object per line for log shippers, its fields mapping onto OpenTelemetry's log
data model: ``time`` (Timestamp), ``level`` (SeverityText), ``severity_number``
(SeverityNumber), ``message`` (Body), ``logger`` (InstrumentationScope), ``exception``, and
the record's context (Attributes: ``connector``, ``task``, ``topic``, ``partition``,
``group``, ``request_id``, ... bound with ``core.telemetry.log_context``). Text lines end
with the context as ``[connector=c task=0]``. One redaction filter
(``core.telemetry.RedactionFilter``) on the handler hides secrets in every line. Logs
always go to stderr, so a console tool's stdout stays pure data.
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
from core.telemetry import CONTEXT_FIELDS, ContextFilter, RedactionFilter

__all__ = [
    "LOG_FORMATS",
    "LOG_FORMAT_ENV_VAR",
    "LOG_LEVELS",
    "LOG_LEVEL_ENV_VAR",
    "JsonFormatter",
    "TextFormatter",
    "add_logging_options",
    "apply_logging_options",
    "configure_console_logging",
    "configure_server_logging",
    "logging_summary",
    "parse_levels",
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
_chosen_loggers: dict[str, int] = {}  # per-logger levels the user chose
_installed: logging.Handler | None = None


#: OpenTelemetry SeverityNumber of each level (the first of its range).
_SEVERITY_NUMBERS = {"DEBUG": 5, "INFO": 9, "WARNING": 13, "ERROR": 17, "CRITICAL": 21}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ISO 8601), ``level``,
    ``severity_number``, ``logger``, ``message``, the record's context fields and, for an
    exception, ``exception`` (its traceback as one string)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC)
                            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "severity_number": _SEVERITY_NUMBERS.get(record.levelname, 0),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in (getattr(record, "ferry_context", None) or {}).items():
            entry.setdefault(key, value)
        if record.exc_info and not record.exc_text:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The text line, then the record's context as ``[connector=c task=0]`` if it has one
    (as Kafka Connect's ``[name|task-0]``)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = getattr(record, "ferry_context", None)
        if not context:
            return line
        known = [k for k in CONTEXT_FIELDS if k in context]
        shown = " ".join(f"{k}={context[k]}" for k in [*known, *sorted(set(context) -
                                                                       set(known))])
        head, sep, rest = line.partition("\n")  # after the message, before a traceback
        return f"{head} [{shown}]{sep}{rest}"


def parse_levels(text: str) -> tuple[str | None, dict[str, str]]:
    """``info,core.broker=debug`` -> (``info``, {``core.broker``: ``debug``}); ValueError
    naming the bad part."""
    root: str | None = None
    loggers: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, level = part.rpartition("=")
        level = level.strip().lower()
        if level not in LOG_LEVELS:
            raise ValueError(f"invalid level {level!r} in {text!r}: choose one of "
                             f"{', '.join(LOG_LEVELS)}")
        if not sep:
            root = level
        elif not name.strip():
            raise ValueError(f"{part!r} in {text!r} names no logger: use LOGGER=LEVEL")
        else:
            loggers[name.strip()] = level
    if root is None and not loggers:
        raise ValueError(f"no level in {text!r}")
    return root, loggers


def _level_arg(text: str) -> str:
    try:
        parse_levels(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text.strip()


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
                            help=f"debug, info, warning or error, then LOGGER=LEVEL pairs, "
                                 f"e.g. info,core.broker=debug (default: "
                                 f"${LOG_LEVEL_ENV_VAR}, else warning for console tools and "
                                 "info for servers)")
        parser.add_argument("--log-format", metavar="FORMAT", type=_format_arg,
                            default=argparse.SUPPRESS,
                            help=f"text or json, one object per line (default: "
                                 f"${LOG_FORMAT_ENV_VAR}, else text); logs go to stderr")


def apply_logging_options(args: argparse.Namespace) -> None:
    """Record the level and format from ``args`` or the environment; ``CliError`` for a bad
    environment value (flags are checked by the parser)."""
    global _chosen_level, _chosen_format, _chosen_loggers
    text = getattr(args, "log_level", None) or _levels_from_env()
    root, loggers = parse_levels(text) if text else (None, {})
    fmt = getattr(args, "log_format", None) or _from_env(LOG_FORMAT_ENV_VAR, LOG_FORMATS)
    _chosen_level = getattr(logging, root.upper()) if root else None
    _chosen_loggers = {name: getattr(logging, level.upper()) for name, level in loggers.items()}
    _chosen_format = fmt or "text"


def _levels_from_env() -> str | None:
    raw = os.environ.get(LOG_LEVEL_ENV_VAR, "")
    if not raw.strip():
        return None
    try:
        parse_levels(raw)
    except ValueError as exc:
        raise CliError(f"${LOG_LEVEL_ENV_VAR}: {exc}") from exc
    return raw


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
        _apply_logger_levels()
        return
    handler = logging.StreamHandler(sys.stderr)
    if _chosen_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter(text_format, datefmt="%Y-%m-%d %H:%M:%S"))
    # On the handler, so that every record written passes them, whichever logger made it.
    handler.addFilter(ContextFilter())
    handler.addFilter(RedactionFilter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    _apply_logger_levels()
    _installed = handler


def _apply_logger_levels() -> None:
    for name, level in _chosen_loggers.items():
        logging.getLogger(name).setLevel(level)


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
