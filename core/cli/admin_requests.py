"""One admin request to one broker, for the ``acls`` and ``quotas`` commands.

These APIs are not part of the LogBackend (they administer a Kafka-protocol broker, not
a log), so the commands speak the protocol directly, over the kafka backend's connection,
to the broker named by ``--bootstrap-server``.
"""

from __future__ import annotations

import argparse
from typing import Any

from core.backends.errors import BackendError
from core.backends.kafka.config import parse_bootstrap
from core.backends.kafka.connection import BrokerConnection, TransportError
from core.backends.kafka.retry import Deadline
from core.cli.errors import CliError
from core.protocol.errors import ErrorCode

__all__ = ["add_bootstrap_option", "check_error", "send_admin_request"]

_TIMEOUT_S = 30.0


def add_bootstrap_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", required=True,
                        help="the broker to administer")


def send_admin_request(args: argparse.Namespace, request: Any, lowest: int,
                       highest: int) -> Any:
    """Send ``request`` at the highest version both sides speak; the decoded response.
    Raises CliError when the broker cannot be reached or does not serve the API."""
    try:
        address = parse_bootstrap(f"kafka://{args.bootstrap_server}")[0]
    except BackendError as exc:
        raise CliError(f"--bootstrap-server {args.bootstrap_server!r}: expected HOST:PORT"
                       ) from exc
    conn = BrokerConnection(address, "ferry-admin")
    try:
        conn.connect(_TIMEOUT_S, _TIMEOUT_S, Deadline(_TIMEOUT_S * 1000))
        version = conn.version_for(request, lowest, highest)
        return conn.roundtrip(request, version, _TIMEOUT_S)
    except (TransportError, BackendError) as exc:
        raise CliError(str(exc)) from exc
    finally:
        conn.close()


def check_error(code: int, message: str | None) -> None:
    """Raise CliError naming Kafka's error for a non-zero error code."""
    if code != ErrorCode.NONE:
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        raise CliError(f"the broker refused: {name}" + (f": {message}" if message else ""))
