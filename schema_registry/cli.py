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

from core.cli.errors import CliError, cannot_listen
from core.cli.logging_setup import configure_server_logging
from core.cli.options import DEFAULT_LOG_URL, LOG_ENV_VAR, add_command
from core.cli.shutdown import ShutdownSignals
from schema_registry.config import RegistryConfig
from schema_registry.errors import RegistryConfigError

__all__ = ["UP_SERVICE", "RegistryUpService", "register", "resolve_registry_log_url"]

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


class RegistryUpService:
    """``ferry up``'s Schema Registry (entry point ``ferry.up_services``: ``registry``): one
    instance on the stack's log, serving on ``--registry-listen`` (default 127.0.0.1:8081).
    """

    name = "registry"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--registry-listen", metavar="HOST:PORT", default=UP_LISTEN_DEFAULT,
                            help=f"where the Schema Registry listens (default: "
                                 f"{UP_LISTEN_DEFAULT})")
        parser.add_argument("--registry-config", metavar="FILE",
                            help="Schema Registry settings with Confluent's names")
        parser.add_argument("--no-registry", action="store_true",
                            help="do not run a Schema Registry")

    def check(self, args: argparse.Namespace) -> None:
        from schema_registry.config import parse_host_port

        if args.no_registry:
            return
        try:
            parse_host_port(args.registry_listen, "--registry-listen")
            RegistryConfig.from_props(_load(args.registry_config)
                                      if args.registry_config else {})
        except RegistryConfigError as exc:
            raise CliError(str(exc)) from exc

    def start(self, args: argparse.Namespace, log_url: str, data_dir: str) -> object | None:
        from schema_registry.config import parse_host_port
        from schema_registry.service import RegistryService

        if args.no_registry:
            return None
        try:
            props = _load(args.registry_config) if args.registry_config else {}
            listen = parse_host_port(args.registry_listen, "--registry-listen")
            service = RegistryService(log_url, listen=listen,
                                      config=RegistryConfig.from_props(props))
            service.start(wait_ready=30)
        except RegistryConfigError as exc:
            raise CliError(str(exc)) from exc
        except OSError as exc:
            raise cannot_listen("the Schema Registry", args.registry_listen, exc) from exc
        log.info("Schema Registry on %s", service.url)
        return service


#: Where ``ferry up`` serves the Schema Registry.
UP_LISTEN_DEFAULT = "127.0.0.1:8081"
#: What ``ferry up`` loads through the ``ferry.up_services`` entry point ``registry``.
UP_SERVICE = RegistryUpService()
