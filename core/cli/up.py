"""``ferry up``: run the single-machine stack on one data directory until stopped.

Today the stack is the Kafka-protocol broker, served from the process's embedded runtime
(one LogManager and group coordinator per directory), so that later in-process components
(Connect, the Schema Registry) share the same log through ``embedded:`` backends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from typing import TYPE_CHECKING

from core.backends.embedded_runtime import acquire_runtime, release_runtime
from core.backends.translate import storage_errors
from core.cli.errors import CliError
from core.cli.logging_setup import configure_server_logging
from core.cli.options import LOG_ENV_VAR, add_command

if TYPE_CHECKING:  # imported when the command runs: the other commands need no codec
    from core.broker.server import Listener

__all__ = ["DEFAULT_DATA_DIR", "register"]

log = logging.getLogger(__name__)

DEFAULT_DATA_DIR = "./ferry-data"
DEFAULT_LISTEN = "127.0.0.1:9092"
_EMBEDDED = "embedded:"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``up``."""
    parser = add_command(subparsers, "up", "run the single-machine stack until Ctrl-C")
    parser.add_argument("--data-dir", metavar="DIR",
                        help=f"the data directory (default: the path of an embedded --log "
                             f"URL, else {DEFAULT_DATA_DIR})")
    parser.add_argument("--listen", metavar="HOST:PORT", default=DEFAULT_LISTEN,
                        help=f"where the broker accepts Kafka clients (default: "
                             f"{DEFAULT_LISTEN})")
    parser.set_defaults(func=_up)


def _data_dir(args: argparse.Namespace) -> str:
    """``--data-dir``, else the path of an ``embedded:`` ``--log`` flag or ``$FERRY_LOG``,
    else the default. ``up`` hosts the log itself: a remote ``--log`` flag is an error, while
    a remote ``$FERRY_LOG`` (set for the console tools) is ignored."""
    if args.data_dir:
        return str(args.data_dir)
    flag = getattr(args, "log", None)
    if flag:
        path = _embedded_path(flag)
        if path is None:
            raise CliError(
                f"ferry up hosts the log itself and cannot run on {flag!r}; "
                "use --data-dir DIR (or --log embedded:DIR)"
            )
        return path
    return _embedded_path(os.environ.get(LOG_ENV_VAR, "")) or DEFAULT_DATA_DIR


def _embedded_path(url: str) -> str | None:
    if url.startswith(_EMBEDDED) and url[len(_EMBEDDED):].strip():
        return url[len(_EMBEDDED):]
    return None


def _up(args: argparse.Namespace) -> int:
    from core.broker.config import BrokerConfigError
    from core.broker.server import parse_listener

    data_dir = _data_dir(args)
    configure_server_logging()
    try:
        asyncio.run(_run(data_dir, parse_listener(args.listen)))
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc
    return 0


async def _run(data_dir: str, listen: Listener) -> None:
    from core.broker.config import BrokerConfig
    from core.broker.server import serve, stop_on_signals

    # Signals are caught before opening, so a SIGTERM during recovery still closes cleanly.
    stop = stop_on_signals()
    owner = {"command": "ferry up", "listener": str(listen)}
    with storage_errors():
        runtime = await asyncio.to_thread(acquire_runtime, data_dir, {}, owner)
    try:
        topics = [t for t in runtime.manager.topics() if not runtime.manager.topic(t).internal]
        log.info("commit log ready at %s with %d topic%s (pid %d)", data_dir, len(topics),
                 "" if len(topics) == 1 else "s", os.getpid())
        if not stop.is_set():
            await serve(BrokerConfig(), runtime.manager, runtime.coordinator, listen=listen,
                        advertised=None, stop=stop, tick_coordinator=False,
                        on_listening=lambda _server: _announce())
    finally:
        await asyncio.to_thread(release_runtime, runtime)
        log.info("commit log at %s closed", data_dir)


def _announce() -> None:
    log.info("Connect REST on 8083 and the Schema Registry on 8081 arrive with later "
             "releases; stop with Ctrl-C or SIGTERM")
