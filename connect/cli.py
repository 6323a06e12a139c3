"""``ferry connect standalone|distributed``: one Connect worker with its REST API, until
stopped.

::

    ferry connect standalone [--log URL] [--rest HOST:PORT] WORKER_CONFIG [CONNECTOR_CONFIG ...]
    ferry connect distributed [--log URL] [--group-id G] [--rest HOST:PORT]
                              [--advertised-url URL] [--config FILE]

A distributed worker joins the cluster of every worker with the same group id on the
same log; connectors are created through the REST API of any of them.

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
from collections.abc import Mapping, Sequence
from typing import Any

from core.backends import open_backend
from core.backends.security import security_settings
from core.cli.errors import CliError, cannot_listen
from core.cli.logging_setup import configure_server_logging
from core.cli.options import DEFAULT_LOG_URL, LOG_ENV_VAR, add_command
from core.cli.shutdown import ShutdownSignals

__all__ = [
    "UP_SERVICE",
    "ConnectUpService",
    "DistributedWorker",
    "StandaloneWorker",
    "load_connector_config",
    "register",
    "resolve_connect_log_url",
]

log = logging.getLogger(__name__)

#: How long the REST server may take to drain on shutdown.
REST_STOP_TIMEOUT_S = 5.0
#: The group of ``ferry connect distributed`` without --group-id or group.id (Kafka's).
DEFAULT_GROUP_ID = "connect-cluster"
#: Where ``ferry up`` serves the Connect REST API.
UP_REST_DEFAULT = "127.0.0.1:8083"
#: How often ``ferry up``'s worker flushes sinks and commits offsets, unless configured.
UP_OFFSET_FLUSH_INTERVAL_MS = 1000


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
    # default=[]: without it argparse lists a "*" positional as required in its error.
    standalone.add_argument("connector_configs", metavar="CONNECTOR_CONFIG", nargs="*",
                            default=[],
                            help="connectors to create at startup (optional; .properties or "
                                 "JSON)")
    standalone.set_defaults(func=_standalone)
    distributed = add_command(modes, "distributed",
                              "run one worker of a Connect cluster and its REST API until "
                              "Ctrl-C or SIGTERM")
    distributed.add_argument("--group-id", metavar="G",
                             help="the cluster's group id (default: group.id from the "
                                  "config, else connect-cluster)")
    distributed.add_argument("--rest", metavar="HOST:PORT",
                             help="where the REST API listens (default: listeners from the "
                                  "config, else 127.0.0.1:8083)")
    distributed.add_argument("--advertised-url", metavar="URL",
                             help="the URL other workers reach this one's REST API at; its "
                                  "host:port is the worker id (default: the listener)")
    distributed.add_argument("--config", metavar="FILE",
                             help="worker settings with Kafka's names (.properties or "
                                  "JSON), e.g. a connect-distributed.properties")
    distributed.set_defaults(func=_distributed)


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


class _WorkerProcess:
    """A herder, its worker and its REST server on one log URL; subclasses make the
    herder. ``start`` binds the REST port, opens the log, starts the herder and serves;
    on failure everything started so far is stopped again."""

    def __init__(self, log_url: str, worker_props: Mapping[str, str],
                 rest_listener: str | None) -> None:
        from connect.rest import RestConfig
        from connect.rest.config import parse_host_port

        self.log_url = log_url
        # security.protocol, sasl.*, ssl.* of the worker config reach the kafka:// backend
        self._log_security = security_settings(worker_props)
        self._rest_config = RestConfig.from_worker_config(worker_props)
        if rest_listener:
            self._rest_config = self._rest_config.with_listener(
                *parse_host_port(rest_listener, "--rest"))
        self._herder: Any = None
        self._server: Any = None
        self._sock: Any = None
        self._backend: Any = None
        self.worker_id = ""

    @property
    def url(self) -> str:
        return str(self._server.url) if self._server is not None else ""

    @property
    def herder(self) -> Any:
        return self._herder

    def _make_herder(self, backend: Any, bound_port: int) -> Any:
        raise NotImplementedError

    def _started(self) -> None:
        """Runs after the herder started, before the REST API serves."""

    def start(self) -> None:
        from connect.rest import RestServer, bind_listener, create_app
        from connect.runtime.process_tuning import tune_gc_for_record_streams

        tune_gc_for_record_streams()
        rest = self._rest_config
        try:
            self._sock = bind_listener(rest.host, rest.port)
        except OSError as exc:
            raise cannot_listen("the Connect REST API", f"{rest.host}:{rest.port}",
                                exc) from exc
        try:
            self._backend = open_backend(self.log_url, self._log_security)
            self._herder = self._make_herder(self._backend, self._sock.getsockname()[1])
            self._server = RestServer(create_app(self._herder, rest), sock=self._sock)
            self._herder.start()
            self._started()
            self._server.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop serving, stop the work (committing offsets), close the log."""
        server, self._server = self._server, None
        herder, self._herder = self._herder, None
        backend, self._backend = self._backend, None
        sock, self._sock = self._sock, None
        try:
            if server is not None:
                server.stop(REST_STOP_TIMEOUT_S)
        finally:
            if sock is not None:
                sock.close()
            try:
                if herder is not None:
                    herder.stop()
            finally:
                if backend is not None:
                    backend.close()


class StandaloneWorker(_WorkerProcess):
    """A standalone herder, its worker and its REST server on one log URL: what
    ``ferry connect standalone`` runs, and what ``ferry up`` runs beside the broker."""

    def __init__(self, log_url: str, worker_props: Mapping[str, str],
                 rest_listener: str | None = None) -> None:
        """``ConnectError`` for a bad worker config (naming the key), ``CliError`` for a
        bad ``rest_listener``."""
        from connect.runtime.worker_config import WorkerConfig

        super().__init__(log_url, worker_props, rest_listener)
        self._worker_config = WorkerConfig.from_props(worker_props)
        self._connectors: Sequence[tuple[str, dict[str, str]]] = ()

    def start(self, connectors: Sequence[tuple[str, dict[str, str]]] = ()) -> None:
        """Start, then create ``connectors`` before the REST API serves."""
        self._connectors = connectors
        super().start()

    def _make_herder(self, backend: Any, bound_port: int) -> Any:
        from connect.runtime.plugins import Plugins
        from connect.runtime.standalone_herder import StandaloneHerder
        from connect.runtime.worker import Worker

        self.worker_id = self._rest_config.worker_id(bound_port)
        return StandaloneHerder(Worker(backend, self._worker_config, Plugins()),
                                self.worker_id)

    def _started(self) -> None:
        for name, config in self._connectors:
            _create(self._herder, name, config)


class DistributedWorker(_WorkerProcess):
    """A distributed herder, its worker and its REST server on one log URL: what
    ``ferry connect distributed`` runs. ``start`` also reads the internal topics and
    joins the group."""

    def __init__(self, log_url: str, worker_props: Mapping[str, str], *,
                 group_id: str | None = None, rest_listener: str | None = None,
                 advertised_url: str | None = None) -> None:
        """``ConnectError`` for a bad worker config (naming the key), ``CliError`` for a
        bad ``rest_listener`` or ``advertised_url``."""
        from connect.runtime.worker_config import DistributedConfig

        props = dict(worker_props)
        props["group.id"] = group_id or props.get("group.id") or DEFAULT_GROUP_ID
        super().__init__(log_url, props, rest_listener)
        self._advertised = _parse_advertised_url(advertised_url) if advertised_url else None
        self._config = DistributedConfig.from_props(props)
        self.advertised_url = ""

    def _make_herder(self, backend: Any, bound_port: int) -> Any:
        from connect.runtime.distributed.herder import DistributedHerder
        from connect.runtime.plugins import Plugins
        from connect.runtime.worker import Worker

        if self._advertised is not None:
            self.advertised_url, self.worker_id = self._advertised
        else:
            self.worker_id = self._rest_config.worker_id(bound_port)
            self.advertised_url = f"http://{self.worker_id}"
        worker = Worker(backend, self._config.worker, Plugins())
        return DistributedHerder(worker, self._config, worker_id=self.worker_id,
                                 url=self.advertised_url)


def _parse_advertised_url(url: str) -> tuple[str, str]:
    """``(url, worker id)`` from ``--advertised-url``: the id is its ``host:port``."""
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"--advertised-url must be an http:// URL such as "
                       f"http://worker1:8083, not {url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise CliError(f"--advertised-url {url!r} has a bad port") from None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port}", f"{host}:{port}"


def _distributed(args: argparse.Namespace) -> int:
    from connect.api.errors import ConnectError

    worker_props = ({str(k): _text(v) for k, v in _load(args.config).items()}
                    if args.config else {})
    url = resolve_connect_log_url(getattr(args, "log", None), worker_props)
    where = f"worker config {args.config}: " if args.config else ""
    try:
        worker = DistributedWorker(url, worker_props, group_id=args.group_id,
                                   rest_listener=args.rest,
                                   advertised_url=args.advertised_url)
    except ConnectError as exc:
        raise CliError(f"{where}{exc}") from exc
    configure_server_logging()
    with ShutdownSignals() as signals:
        try:
            worker.start()
            log.info("Connect worker %s ready on %s in group %s (log %s); stop with Ctrl-C "
                     "or SIGTERM", worker.worker_id, worker.url,
                     worker.herder.config.group_id, url)
            signals.wait()
            log.info("received %s, stopping the Connect worker", signals.signal_name)
        except ConnectError as exc:
            raise CliError(str(exc)) from exc
        finally:
            worker.stop()
    return 0


def _standalone(args: argparse.Namespace) -> int:
    from connect.api.errors import ConnectError

    worker_props = {str(k): _text(v) for k, v in _load(args.worker_config).items()}
    connectors = [load_connector_config(path) for path in args.connector_configs]
    url = resolve_connect_log_url(getattr(args, "log", None), worker_props)
    try:
        worker = StandaloneWorker(url, worker_props, args.rest)
    except ConnectError as exc:
        raise CliError(f"worker config {args.worker_config}: {exc}") from exc
    configure_server_logging()
    with ShutdownSignals() as signals:
        try:
            worker.start(connectors)
            log.info("Connect worker %s ready on %s (log %s); stop with Ctrl-C or SIGTERM",
                     worker.worker_id, worker.url, url)
            signals.wait()
            log.info("received %s, stopping the Connect worker", signals.signal_name)
        except ConnectError as exc:
            raise CliError(str(exc)) from exc
        finally:
            worker.stop()
    return 0


class ConnectUpService:
    """``ferry up``'s Connect worker (entry point ``ferry.up_services``: ``connect``): a
    standalone worker with its REST API on the stack's log. Connectors created through
    REST are kept in ``DATA_DIR/.connect/connectors.json`` and run again after a restart.
    """

    name = "connect"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--connect-rest", metavar="HOST:PORT", default=UP_REST_DEFAULT,
                            help=f"where the Connect REST API listens (default: "
                                 f"{UP_REST_DEFAULT})")
        parser.add_argument("--connect-config", metavar="FILE",
                            help="Connect worker settings (.properties or JSON)")
        parser.add_argument("--no-connect", action="store_true",
                            help="do not run a Connect worker")

    def check(self, args: argparse.Namespace) -> None:
        from connect.api.errors import ConnectError
        from connect.rest.config import parse_host_port

        if args.no_connect:
            return
        try:
            parse_host_port(args.connect_rest, "--connect-rest")
        except ConnectError as exc:
            raise CliError(f"--connect-rest {args.connect_rest!r}: {exc}") from exc
        if args.connect_config:
            _load(args.connect_config)

    def start(self, args: argparse.Namespace, log_url: str, data_dir: str
              ) -> StandaloneWorker | None:
        from connect.api.errors import ConnectError

        if args.no_connect:
            return None
        props = ({str(k): _text(v) for k, v in _load(args.connect_config).items()}
                 if args.connect_config else {})
        state_dir = os.path.join(data_dir, ".connect")
        os.makedirs(state_dir, exist_ok=True)
        props.setdefault("connect.configs.file", os.path.join(state_dir, "connectors.json"))
        # A development stack: a sink's output shows up within a second (Kafka's sample
        # connect-standalone.properties says 10 s, the worker default 60 s). Each flush
        # commits offsets, which on one machine costs little.
        props.setdefault("offset.flush.interval.ms", str(UP_OFFSET_FLUSH_INTERVAL_MS))
        try:
            worker = StandaloneWorker(log_url, props, args.connect_rest)
            worker.start()
        except ConnectError as exc:
            where = f"worker config {args.connect_config}: " if args.connect_config else ""
            raise CliError(f"{where}{exc}") from exc
        log.info("Connect REST API on %s", worker.url)
        return worker


#: What ``ferry up`` loads through the ``ferry.up_services`` entry point ``connect``.
UP_SERVICE = ConnectUpService()
