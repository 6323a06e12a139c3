"""``ferry registry``: one Confluent-compatible Schema Registry instance, until stopped.

::

    ferry registry [--log URL] [--listen HOST:PORT] [--config FILE]

The config file is JSON or Java ``.properties`` with Confluent's names (a
``schema-registry.properties`` works; see ``schema_registry.config``). The log URL is
``--log``, else ``ferry.log`` from the config, else ``kafkastore.bootstrap.servers`` as
``kafka://...``, else ``$FERRY_LOG``, else ``embedded:./ferry-data``. The listener is
``--listen``, else ``listeners`` from the config, else 127.0.0.1:8081. Several instances
on one log elect a leader and forward writes to it. Stops cleanly on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import os
import time

from core.cli.errors import CliError
from core.cli.logging_setup import configure_server_logging
from core.cli.options import DEFAULT_LOG_URL, LOG_ENV_VAR, add_command
from core.cli.shutdown import ShutdownSignals
from schema_registry.config import RegistryConfig
from schema_registry.errors import RegistryConfigError

__all__ = ["register", "resolve_registry_log_url"]

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``registry``."""
    parser = add_command(subparsers, "registry",
                         "run a Confluent-compatible Schema Registry until Ctrl-C or SIGTERM")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help="where the REST API listens (default: listeners from --config, "
                             "else 127.0.0.1:8081)")
    parser.add_argument("--config", metavar="FILE",
                        help="settings with Confluent's names: a schema-registry.properties "
                             "file or a JSON object")
    parser.set_defaults(func=_registry)


def resolve_registry_log_url(flag: str | None, config: RegistryConfig) -> str:
    """``--log``, else ``ferry.log``, else ``kafkastore.bootstrap.servers``, else
    ``$FERRY_LOG``, else the default."""
    return (flag or config.log_url or config.log_url_from_bootstrap()
            or os.environ.get(LOG_ENV_VAR) or DEFAULT_LOG_URL)


def _registry(args: argparse.Namespace) -> int:
    from schema_registry.service import RegistryService  # Flask and waitress: only here

    try:
        props = _load(args.config) if args.config else {}
        config = RegistryConfig.from_props(props)
        service = RegistryService(resolve_registry_log_url(getattr(args, "log", None), config),
                                  listen=args.listen, config=config)
    except RegistryConfigError as exc:
        raise CliError(str(exc)) from exc
    configure_server_logging()
    with ShutdownSignals() as signals:
        service.start()
        try:
            log.info("Schema Registry serving on %s; stop with Ctrl-C or SIGTERM", service.url)
            while not signals.requested:
                if service.fatal_error is not None:
                    raise CliError(str(service.fatal_error))
                time.sleep(0.2)
            log.info("received %s, stopping the Schema Registry", signals.signal_name)
        finally:
            service.stop()
    return 0


def _load(path: str) -> dict[str, object]:
    from core.broker.config import BrokerConfigError, load_config_file

    try:
        return load_config_file(path)
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc
