"""One admin request to a broker, for the ``acls`` and ``quotas`` commands.

These APIs administer a Kafka-protocol broker, not a log, so they are not part of the
LogBackend; the commands send them with kafka-python's admin client, which negotiates the
version and speaks TLS and SASL (PLAIN, SCRAM). ``--command-config FILE`` takes the
client settings an operator already uses with ``kafka-acls --command-config``
(``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` or librdkafka's
``sasl.username``/``sasl.password``, ``ssl.*`` PEM locations).
"""

from __future__ import annotations

import argparse
import logging
import re
import socket
from typing import Any

from core.broker.config import BrokerConfigError, load_config_file
from core.cli.errors import CliError

__all__ = ["add_bootstrap_option", "check_error", "client_settings", "send_admin_request"]

_TIMEOUT_MS = 30000
#: Kafka / librdkafka client setting -> kafka-python keyword.
_SIMPLE = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.truststore.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.keystore.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "client.id": "client_id",
}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def add_bootstrap_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", required=True,
                        help="the broker to administer")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client settings (security.protocol, sasl.*, ssl.*), as "
                             "kafka-acls and kafka-configs take them")


def client_settings(path: str | None) -> dict[str, Any]:
    """kafka-python keywords from a Kafka client properties (or JSON) file."""
    if path is None:
        return {}
    try:
        given = load_config_file(path)
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from None
    settings: dict[str, Any] = {}
    for key, value in given.items():
        text = str(value)
        if key in _SIMPLE:
            settings[_SIMPLE[key]] = text
        elif key == "sasl.jaas.config":
            options = dict(_JAAS_OPTION.findall(text))
            if "username" not in options or "password" not in options:
                raise CliError(f"{path}: sasl.jaas.config needs username=\"...\" and "
                               "password=\"...\"")
            settings["sasl_plain_username"] = options["username"]
            settings["sasl_plain_password"] = options["password"]
        elif key == "ssl.endpoint.identification.algorithm":
            settings["ssl_check_hostname"] = text.lower() == "https"
        else:
            raise CliError(f"{path}: client setting {key!r} is not supported here (use "
                           f"{', '.join(sorted([*_SIMPLE, 'sasl.jaas.config']))})")
    if "security_protocol" in settings:
        settings["security_protocol"] = settings["security_protocol"].upper()
    return settings


def send_admin_request(args: argparse.Namespace, request: Any) -> Any:
    """Send ``request`` at the highest version both sides speak; the decoded response.
    Raises CliError when the broker cannot be reached or does not serve the API."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    settings = client_settings(getattr(args, "command_config", None))
    host, _, port = args.bootstrap_server.rpartition(":")
    if not host or not port.isdigit():
        raise CliError(f"--bootstrap-server {args.bootstrap_server!r}: expected HOST:PORT")
    try:  # fail at once, in one line, where nothing listens
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise CliError(f"cannot connect to {args.bootstrap_server}: "
                       f"{exc.strerror or exc}") from None
    # kafka-python logs every retry; the command reports the outcome in one line.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        admin = KafkaAdminClient(bootstrap_servers=args.bootstrap_server,
                                 request_timeout_ms=_TIMEOUT_MS, **settings)
    except (KafkaError, ValueError, TypeError, OSError) as exc:
        raise CliError(f"cannot reach the broker at {args.bootstrap_server}: {exc}") from None
    try:
        return admin._manager.run(admin._manager.send, request)  # kafka-python's sender
    except (KafkaError, OSError) as exc:
        raise CliError(f"{type(request).__name__} to {args.bootstrap_server} failed: "
                       f"{exc}") from None
    finally:
        admin.close()


def check_error(code: int, message: str | None) -> None:
    """Raise CliError naming Kafka's error for a non-zero error code."""
    if code != 0:
        from kafka.errors import for_code

        name = getattr(for_code(code), "message", None) or f"error code {code}"
        raise CliError(f"the broker refused: {name}" + (f": {message}" if message else ""))
