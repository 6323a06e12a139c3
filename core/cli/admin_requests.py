"""One admin request to a broker, for the ``acls`` and ``quotas`` commands.

These APIs administer a Kafka-protocol broker, not a log, so they are not part of the
LogBackend; the commands send them with kafka-python's admin client, which negotiates the
version and speaks TLS and SASL (PLAIN, SCRAM). ``--command-config FILE`` takes the
client settings an operator already uses with ``kafka-acls --command-config``, read by
``core.backends.security`` as for every Ferry client.
"""

from __future__ import annotations

import argparse
import logging
import socket
from collections.abc import Callable
from typing import Any, TypeVar

from core.cli.errors import CliError
from core.cli.options import command_config

__all__ = ["add_bootstrap_option", "check_error", "client_settings", "retry_unreachable",
           "send_admin_request"]

T = TypeVar("T")

_TIMEOUT_MS = 30000
_ATTEMPTS = 3  # per request, when the chosen broker cannot be reached


def add_bootstrap_option(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap-server``; ``--command-config`` comes with every command
    (``core.cli.options.add_command``)."""
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT...]",
                        required=True,
                        help="the broker to administer (a cluster: any of its brokers, or "
                             "several, comma-separated; each forwards changes to the "
                             "active controller)")


def client_settings(settings: dict[str, str]) -> dict[str, Any]:
    """kafka-python keywords for Kafka client security settings (read, and checked, by
    ``core.backends.security`` as for every Ferry client)."""
    from core.backends.security import ClientSecurity, ClientSecurityError

    try:
        security = ClientSecurity.parse(settings)
    except ClientSecurityError as exc:
        raise CliError(f"--command-config: {exc}") from None
    result: dict[str, Any] = {"security_protocol": security.protocol}
    if security.uses_sasl:
        result.update(sasl_mechanism=security.mechanism,
                      sasl_plain_username=security.username,
                      sasl_plain_password=security.password)
    if security.uses_tls:
        result.update(ssl_cafile=security.ca_file or None,
                      ssl_certfile=security.cert_file or None,
                      ssl_keyfile=security.key_file or None,
                      ssl_password=security.key_password or None,
                      ssl_check_hostname=security.check_hostname)
    return result


def send_admin_request(args: argparse.Namespace, request: Any) -> Any:
    """Send ``request`` at the highest version both sides speak; the decoded response.
    Raises CliError when the broker cannot be reached or does not serve the API."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    settings = client_settings(command_config(args))
    servers = [s.strip() for s in args.bootstrap_server.split(",") if s.strip()]
    addresses = []
    for server in servers or [args.bootstrap_server]:
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            raise CliError(f"--bootstrap-server {server!r}: expected HOST:PORT")
        addresses.append((host.strip("[]"), int(port)))
    failure: OSError | None = None
    for address in addresses:  # fail at once, in one line, where nothing listens
        try:
            socket.create_connection(address, timeout=10).close()
            break
        except OSError as exc:
            failure = exc
    else:
        assert failure is not None
        raise CliError(f"cannot connect to {args.bootstrap_server}: "
                       f"{failure.strerror or failure}") from None
    # kafka-python logs every retry; the command reports the outcome in one line.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        admin = KafkaAdminClient(bootstrap_servers=servers,
                                 request_timeout_ms=_TIMEOUT_MS, **settings)
    except (KafkaError, ValueError, TypeError, OSError) as exc:
        raise CliError(f"cannot reach the broker at {args.bootstrap_server}: {exc}") from None
    try:  # kafka-python's sender, to the least loaded broker it knows
        return retry_unreachable(lambda: admin._manager.run(admin._manager.send, request))
    except (KafkaError, OSError) as exc:
        raise CliError(f"{type(request).__name__} to {args.bootstrap_server} failed: "
                       f"{exc}") from None
    finally:
        admin.close()


def retry_unreachable(call: Callable[[], T]) -> T:
    """``call()`` (one request of a kafka-python admin client), again up to twice if the
    broker it chose cannot be reached: a cluster's broker that just died stays in the
    metadata for a session timeout, and the client then backs off from it and picks
    another."""
    from kafka.errors import KafkaConnectionError, NodeNotReadyError

    for _ in range(_ATTEMPTS - 1):
        try:
            return call()
        except (KafkaConnectionError, NodeNotReadyError):
            continue
    return call()


def check_error(code: int, message: str | None) -> None:
    """Raise CliError naming Kafka's error for a non-zero error code."""
    if code != 0:
        from kafka.errors import for_code

        name = getattr(for_code(code), "message", None) or f"error code {code}"
        raise CliError(f"the broker refused: {name}" + (f": {message}" if message else ""))
