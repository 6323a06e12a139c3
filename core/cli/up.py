"""``ferry up``: run the single-machine stack on one data directory until stopped."""

from __future__ import annotations

import argparse
import logging
import os
from contextlib import closing

from core.backends import open_backend
from core.cli.errors import CliError
from core.cli.logging_setup import configure_server_logging
from core.cli.options import LOG_ENV_VAR, add_command
from core.cli.shutdown import ShutdownSignals

__all__ = ["DEFAULT_DATA_DIR", "register"]

log = logging.getLogger(__name__)

DEFAULT_DATA_DIR = "./ferry-data"
_EMBEDDED = "embedded:"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``up``."""
    parser = add_command(subparsers, "up", "run the single-machine stack until Ctrl-C")
    parser.add_argument("--data-dir", metavar="DIR",
                        help=f"the data directory (default: the path of an embedded --log "
                             f"URL, else {DEFAULT_DATA_DIR})")
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
    data_dir = _data_dir(args)
    configure_server_logging()
    # Signals are caught before opening, so a SIGTERM during recovery still closes cleanly.
    with ShutdownSignals() as shutdown:
        with closing(open_backend(_EMBEDDED + data_dir)) as backend:
            topics = backend.list_topics()
            log.info("commit log ready at %s with %d topic%s (pid %d)", data_dir, len(topics),
                     "" if len(topics) == 1 else "s", os.getpid())
            log.info("the Kafka-protocol broker on 127.0.0.1:9092, Connect REST on 8083 and "
                     "the Schema Registry on 8081 arrive with the next releases")
            log.info("running; retention and compaction run in the background; "
                     "stop with Ctrl-C or SIGTERM")
            # The backend's maintenance thread does the work; this thread only waits.
            shutdown.wait()
            log.info("%s received, shutting down", shutdown.signal_name)
        log.info("commit log at %s closed", data_dir)
    return 0
