"""``ferry connect standalone``: one Connect worker with its REST API, until stopped.

::

    ferry connect standalone [--log URL] [--rest HOST:PORT] WORKER_CONFIG [CONNECTOR_CONFIG ...]

Configs are JSON or Java ``.properties`` files with Kafka's keys, so a
``connect-standalone.properties`` copied from a Kafka deployment works. A connector file
holds either the connector's flat config or ``{"name": ..., "config": {...}}`` (Kafka's
create request). The log URL is ``--log``, else the worker config's ``ferry.log``, else
``$FERRY_LOG``, else ``embedded:./ferry-data``. Connect is imported when the command runs,
so the console tools never pay for it.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from core.backends import open_backend
from core.cli.errors import CliError
from core.cli.logging_setup import configure_server_logging
from core.cli.options import DEFAULT_LOG_URL, LOG_ENV_VAR, add_command
from core.cli.shutdown import ShutdownSignals

__all__ = ["load_connector_config", "register", "resolve_connect_log_url"]

log = logging.getLogger(__name__)

#: How long the REST server may take to drain on shutdown.
REST_STOP_TIMEOUT_S = 5.0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``connect`` with its ``standalone`` mode."""
    parser = add_command(subparsers, "connect", "run a Kafka Connect worker")
    modes = parser.add_subparsers(dest="connect_mode", metavar="MODE", required=True)
    standalone = add_command(modes, "standalone",
                             "run one Connect worker and its REST API until Ctrl-C or "
                             "SIGTERM")
    standalone.add_argument("--rest", metavar="HOST:PORT",
                            help="where the REST API listens (default: listeners from the "
                                 "worker config, else 127.0.0.1:8083)")
    standalone.add_argument("worker_config", metavar="WORKER_CONFIG",
                            help="worker settings with Kafka's names (.properties or JSON)")
    standalone.add_argument("connector_configs", metavar="CONNECTOR_CONFIG", nargs="*",
                            help="connectors to create at startup (.properties or JSON)")
    standalone.set_defaults(func=_standalone)


def resolve_connect_log_url(flag: str | None, worker_config: dict[str, str]) -> str:
    """``--log``, else ``ferry.log`` from the worker config, else ``$FERRY_LOG``, else the
    default."""
    return (flag or worker_config.get("ferry.log") or os.environ.get(LOG_ENV_VAR)
            or DEFAULT_LOG_URL)


def load_connector_config(path: str) -> tuple[str, dict[str, str]]:
    """``(name, config)`` from a connector file; ``CliError`` if it has no name."""
    data: dict[str, Any] = _load(path)
    if isinstance(data.get("config"), dict):
        name = data.get("name") or data["config"].get("name")
        config = data["config"]
    else:
        name, config = data.get("name"), data
    if not isinstance(name, str) or not name.strip():
        raise CliError(f"connector config {path} has no name")
    config = {str(k): _text(v) for k, v in config.items()}
    config.setdefault("name", name)
    return name.strip(), config


def _load(path: str) -> dict[str, Any]:
    from core.broker.config import BrokerConfigError, load_config_file

    try:
        return load_config_file(path)
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _create(herder: Any, name: str, config: dict[str, str]) -> None:
    from connect.api.errors import ConnectError

    try:
        herder.put_connector_config(name, config, allow_replace=True)
    except ConnectError as exc:
        raise CliError(f"connector {name}: {' '.join(str(exc).split())}") from exc
    log.info("created connector %s", name)


def _standalone(args: argparse.Namespace) -> int:
    from connect.api.errors import ConnectError
    from connect.rest import RestConfig, RestServer, bind_listener, create_app
    from connect.rest.config import parse_host_port
    from connect.runtime.plugins import Plugins
    from connect.runtime.standalone_herder import StandaloneHerder
    from connect.runtime.worker import Worker
    from connect.runtime.worker_config import WorkerConfig

    worker_props = {str(k): _text(v) for k, v in _load(args.worker_config).items()}
    connectors = [load_connector_config(path) for path in args.connector_configs]
    try:
        rest_config = RestConfig.from_worker_config(worker_props)
        if args.rest:
            rest_config = rest_config.with_listener(*parse_host_port(args.rest, "--rest"))
        worker_config = WorkerConfig.from_props(worker_props)
    except ConnectError as exc:
        raise CliError(f"worker config {args.worker_config}: {exc}") from exc
    configure_server_logging()
    url = resolve_connect_log_url(getattr(args, "log", None), worker_props)
    with ShutdownSignals() as signals:
        sock = bind_listener(rest_config.host, rest_config.port)
        try:
            backend = open_backend(url)
        except BaseException:
            sock.close()
            raise
        herder = server = None
        try:
            worker_id = rest_config.worker_id(sock.getsockname()[1])
            herder = StandaloneHerder(Worker(backend, worker_config, Plugins()), worker_id)
            server = RestServer(create_app(herder, rest_config), sock=sock)
            herder.start()
            for name, config in connectors:
                _create(herder, name, config)
            server.start()
            log.info("Connect worker %s ready on %s (log %s); stop with Ctrl-C or SIGTERM",
                     worker_id, server.url, url)
            signals.wait()
            log.info("received %s, stopping the Connect worker", signals.signal_name)
        except ConnectError as exc:
            raise CliError(str(exc)) from exc
        finally:
            if server is not None:
                server.stop(REST_STOP_TIMEOUT_S)
            sock.close()
            if herder is not None:
                herder.stop()
            backend.close()
    return 0
