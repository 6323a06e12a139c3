"""Options shared by every command: ``--log URL`` and the small parsers for flag values."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterable

from core.backends import LogBackend, open_backend
from core.cli.errors import CliError
from core.cli.logging_setup import add_logging_options

__all__ = [
    "DEFAULT_LOG_URL",
    "LOG_ENV_VAR",
    "add_command",
    "add_log_option",
    "check_partition",
    "command_config",
    "open_log",
    "parse_key_values",
    "resolve_log_url",
]

LOG_ENV_VAR = "FERRY_LOG"
DEFAULT_LOG_URL = "embedded:./ferry-data"

_LOG_HELP = (
    f"where the topics live: embedded:PATH or kafka://HOST:PORT "
    f"(default: ${LOG_ENV_VAR}, else {DEFAULT_LOG_URL})"
)


def add_log_option(parser: argparse.ArgumentParser) -> None:
    """Accept ``--log URL`` on ``parser``.

    The default is SUPPRESS on every parser, so a value given before the subcommand is not
    overwritten by the subparser's default when none is given after it. Adding it to a
    parser that already has ``--log`` does nothing.
    """
    # A plugin's parser may define its own --log; argparse then reports a conflict.
    with contextlib.suppress(argparse.ArgumentError):
        parser.add_argument("--log", metavar="URL", default=argparse.SUPPRESS, help=_LOG_HELP)


def add_command(
    subparsers: argparse._SubParsersAction, name: str, help_text: str
) -> argparse.ArgumentParser:
    """Add a subcommand parser that accepts ``--log``, ``--log-level`` and ``--log-format``
    and rejects abbreviated options."""
    parser = subparsers.add_parser(
        name, help=help_text, description=help_text, allow_abbrev=False
    )
    add_log_option(parser)
    add_logging_options(parser)
    with contextlib.suppress(argparse.ArgumentError):
        parser.add_argument(
            "--command-config", metavar="FILE", default=argparse.SUPPRESS,
            help="client settings for a kafka:// log, as Kafka's tools take them: "
                 "security.protocol, sasl.mechanism, sasl.username, sasl.password, "
                 "ssl.ca.location ... (a .properties file)")
    return parser


def command_config(args: argparse.Namespace) -> dict[str, str]:
    """The settings of ``--command-config FILE`` (empty without it); CliError if the file
    cannot be read."""
    path = getattr(args, "command_config", None)
    if not path:
        return {}
    from core.broker.config import BrokerConfigError, load_config_file

    try:
        return {k: str(v) for k, v in load_config_file(path).items()}
    except BrokerConfigError as exc:
        raise CliError(f"--command-config: {exc}") from exc


def resolve_log_url(args: argparse.Namespace) -> str:
    """The log URL to use: ``--log``, else ``$FERRY_LOG``, else ``embedded:./ferry-data``."""
    flag = getattr(args, "log", None)
    if flag:
        return str(flag)
    return os.environ.get(LOG_ENV_VAR) or DEFAULT_LOG_URL


def open_log(args: argparse.Namespace, *, create: bool = False) -> LogBackend:
    """Open the backend named by the resolved ``--log`` URL (``main`` resolves it).

    An ``embedded:`` directory must already hold a log unless ``create`` (a mistyped path
    is an error, not a new empty log); a ``kafka://`` address that refuses the connection
    fails at once instead of being retried for a minute.
    """
    url = resolve_log_url(args)
    config: dict[str, str] = command_config(args)
    scheme = url.strip().partition(":")[0].lower()
    if scheme == "kafka":  # imported for its scheme only: each backend has its own cost
        from core.backends.kafka.config import FAIL_FAST_ON_REFUSED

        config[FAIL_FAST_ON_REFUSED] = "true"
    elif scheme == "embedded" and not create:
        from core.backends.embedded import MUST_EXIST

        config[MUST_EXIST] = "true"
    return open_backend(url, config)


def parse_key_values(items: Iterable[str] | None, flag: str) -> dict[str, str]:
    """``["k=v", ...]`` to a dict; the value may contain ``=``, the key must not be empty."""
    result: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{flag} {item!r} is not of the form KEY=VALUE")
        result[key.strip()] = value
    return result


def check_partition(backend: LogBackend, topic: str, partition: int | None) -> int:
    """Return the partition count of ``topic`` (``UnknownTopicError`` if it does not exist),
    checking that ``partition``, when given, is one of its partitions."""
    count = backend.partition_count(topic)
    if partition is not None and not 0 <= partition < count:
        valid = "0" if count == 1 else f"0-{count - 1}"
        raise CliError(
            f"partition {partition} does not exist: topic {topic!r} has {count} "
            f"partition{'s' if count != 1 else ''} ({valid})"
        )
    return count
