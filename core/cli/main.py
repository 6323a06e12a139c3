"""The ``ferry`` entry point: builds the parser, dispatches, reports errors in one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version

from core.backends.errors import BackendError
from core.cli import acls, broker, consume, container, groups, produce, quotas, topics, up, users
from core.cli.errors import CliError
from core.cli.logging_setup import (
    add_logging_options,
    apply_logging_options,
    configure_console_logging,
)
from core.cli.options import add_log_option, resolve_log_url
from core.cli.plugins import load_plugin_commands

__all__ = ["build_parser", "main"]

DISTRIBUTION = "ferryman"

#: Built-in commands, registered exactly as ``ferry.commands`` plugins are.
BUILTIN_COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "topics": topics.register,
    "produce": produce.register,
    "consume": consume.register,
    "groups": groups.register,
    "up": up.register,
    "broker": broker.register,
    "container": container.register,
    "acls": acls.register,
    "quotas": quotas.register,
    "users": users.register,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ferry`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code:
    0 on success, 1 for bad input or a backend failure (one ``ferry: error:`` line on
    stderr), 2 for a command-line usage error, 130 when interrupted."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        apply_logging_options(argparse.Namespace())  # $FERRY_LOG_*, for plugin warnings
    except CliError as exc:
        _report(exc)
        return 1
    configure_console_logging()
    try:
        parser = build_parser(load_plugins=_command_word(argv) not in BUILTIN_COMMANDS)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage error, --help or --version: argparse has printed
        return _exit_code(exc.code)
    apply_logging_options(args)  # servers use it too when they configure their logging
    configure_console_logging()
    # Plugins read the effective URL here; args.log stays as given (``up`` tells them apart).
    args.log_url = resolve_log_url(args)
    func = getattr(args, "func", None)
    if func is None:  # a plugin command that registered no handler
        parser.print_help(sys.stderr)
        return 2
    try:
        result = func(args)
    except (CliError, BackendError, OSError) as exc:
        _report(exc)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0 if result is None else int(result)


def build_parser(*, load_plugins: bool = True) -> argparse.ArgumentParser:
    """The full ``ferry`` parser: built-in commands, then plugin commands if asked."""
    parser = argparse.ArgumentParser(
        prog="ferry",
        description="Ferry: a Kafka-compatible streaming platform. Console tools work on any "
                    "log: --log embedded:PATH (in-process) or kafka://HOST:PORT.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"ferry {_version()}")
    add_log_option(parser)
    add_logging_options(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in BUILTIN_COMMANDS.values():
        register(subparsers)
    if load_plugins:
        load_plugin_commands(subparsers)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The subcommand name in ``argv``, skipping global options, or None.

    Plugins are imported only when it is not a built-in, so ``ferry produce`` never pays
    for importing Connect or the registry.
    """
    tokens = iter(argv)
    for token in tokens:
        if token in _VALUED_GLOBAL_OPTIONS:
            next(tokens, None)
        elif not token.startswith("-"):
            return token
    return None


_VALUED_GLOBAL_OPTIONS = frozenset({"--log", "--log-level", "--log-format"})


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")  # SystemExit("message") prints like the interpreter would
    return 1


def _report(exc: BaseException) -> None:
    message = " ".join(str(exc).split()) or type(exc).__name__
    sys.stderr.write(f"ferry: error: {message}\n")
    sys.stderr.flush()
