"""``ferry up``: run the single-machine stack on one data directory until stopped.

The stack is the Kafka-protocol broker, served from the process's embedded runtime (one
LogManager and group coordinator per directory), plus every service registered under the
entry-point group ``ferry.up_services`` (Connect's worker, the Schema Registry), which
share that runtime through ``embedded:`` backends on the same directory.

A service entry point names an object with ``name``, ``add_arguments(parser)`` (its
``ferry up`` flags), optionally ``check(args)`` (raises ``CliError`` for bad flags; every service's
check runs before anything starts) and ``start(args, log_url, data_dir)``, which returns
a running service with ``stop()`` (or None when its flags turned it off). Services start
after the log is open and stop before it closes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.backends.embedded_runtime import acquire_runtime, release_runtime
from core.backends.translate import storage_errors
from core.cli.broker import (
    DEFAULT_LISTEN,
    add_broker_config_options,
    load_broker_config,
    resolve_listeners,
)
from core.cli.errors import CliError
from core.cli.logging_setup import configure_server_logging, logging_summary
from core.cli.options import LOG_ENV_VAR, add_command, parse_key_values

if TYPE_CHECKING:  # imported when the command runs: the other commands need no codec
    from core.broker.config import BrokerConfig
    from core.broker.observability import BrokerObservability
    from core.broker.server import Listener

__all__ = ["DEFAULT_DATA_DIR", "register"]

log = logging.getLogger(__name__)

DEFAULT_DATA_DIR = "./ferry-data"
DEFAULT_METRICS = "127.0.0.1:9404"
_EMBEDDED = "embedded:"

#: Broker settings of the single-machine stack unless the config file or -o sets them:
#: topics are created on first use, as Kafka's own default does (``ferry broker`` keeps it
#: off), and a new group rebalances at once, as in Confluent's single-node demo stacks.
UP_BROKER_DEFAULTS = {
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``up``."""
    parser = add_command(subparsers, "up", "run the single-machine stack until Ctrl-C")
    parser.add_argument("--data-dir", metavar="DIR",
                        help=f"the data directory (default: the path of an embedded --log "
                             f"URL, else log.dirs from --broker-config, else "
                             f"{DEFAULT_DATA_DIR})")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help=f"where the broker accepts Kafka clients (default: listeners "
                             f"from --broker-config, else {DEFAULT_LISTEN})")
    parser.add_argument("--advertised-listener", metavar="HOST:PORT",
                        help="the address Kafka clients are told to use (default: "
                             "advertised.listeners from --broker-config, else --listen)")
    parser.add_argument("--metrics", metavar="HOST:PORT",
                        help=f"serve the broker's Prometheus /metrics and /health here "
                             f"(default: {DEFAULT_METRICS}, the JMX exporter's usual port; "
                             "'off' for none)")
    parser.add_argument("--brokers", type=int, default=1, metavar="N",
                        help="run a local cluster of N broker+controller nodes instead "
                             "(replicated topics; Kafka listeners on --listen's port, +2, "
                             "...; no other services); default 1: the single-machine stack")
    add_broker_config_options(parser, "--broker-config", UP_BROKER_DEFAULTS)
    for service in _services():
        service.add_arguments(parser)
    parser.set_defaults(func=_up)


SERVICE_GROUP = "ferry.up_services"


def _services() -> list[Any]:
    """The ``ferry.up_services`` entry points, by name; a broken one is skipped with a
    warning, as command plugins are."""
    found = []
    for ep in sorted(entry_points(group=SERVICE_GROUP), key=lambda e: e.name):
        try:
            found.append(ep.load())
        except Exception as exc:  # third-party code: anything can go wrong
            log.warning("skipping ferry up service %r (%s): %s: %s", ep.name, ep.value,
                        type(exc).__name__, exc)
    return found


def _data_dir(args: argparse.Namespace, config: BrokerConfig) -> str:
    """``--data-dir``, else the path of an ``embedded:`` ``--log`` flag, else ``log.dirs``
    of the broker config, else of an ``embedded:`` ``$FERRY_LOG``, else the default. ``up``
    hosts the log itself: a remote ``--log`` flag is an error, while a remote ``$FERRY_LOG``
    (set for the console tools) is ignored."""
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
    log_dirs = config.log_dirs.split(",")[0].strip()
    return log_dirs or _embedded_path(os.environ.get(LOG_ENV_VAR, "")) or DEFAULT_DATA_DIR


def _embedded_path(url: str) -> str | None:
    if url.startswith(_EMBEDDED) and url[len(_EMBEDDED):].strip():
        return url[len(_EMBEDDED):]
    return None


def _up(args: argparse.Namespace) -> int:
    from core.broker.config import BrokerConfigError

    if args.brokers != 1:
        return _up_cluster(args)

    config = load_broker_config(args, UP_BROKER_DEFAULTS)
    data_dir = _data_dir(args, config)
    try:
        listen, advertised = resolve_listeners(config, args.listen, args.advertised_listener)
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc
    if advertised is None and listen.host in ("", "0.0.0.0", "::"):
        raise CliError(f"clients cannot connect to {listen}: give --advertised-listener "
                       "HOST:PORT (or advertised.listeners)")
    metrics = _metrics_address(args)
    for service in _services():
        check = getattr(service, "check", None)  # optional for third-party services
        if check is not None:
            check(args)
    configure_server_logging()
    try:
        observability = _start_observability(metrics, explicit=bool(args.metrics))
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc
    try:
        asyncio.run(_run(data_dir, config, listen, advertised, args, observability))
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc
    finally:
        if observability is not None:
            observability.stop()
    return 0


def _up_cluster(args: argparse.Namespace) -> int:
    """``--brokers N``: N local cluster nodes (``core.cli.local_cluster``)."""
    from core.broker.server import parse_listener
    from core.cli.local_cluster import run_local_cluster

    listen = parse_listener(args.listen or DEFAULT_LISTEN)
    extra = parse_key_values(args.broker_overrides, "--override")
    return run_local_cluster(args.brokers, listen.host, listen.port,
                             Path(args.data_dir or DEFAULT_DATA_DIR), extra)


def _metrics_address(args: argparse.Namespace) -> Listener | None:
    from core.broker.config import BrokerConfigError
    from core.broker.server import parse_listener

    text = args.metrics or DEFAULT_METRICS
    if text.strip().lower() == "off":
        return None
    try:
        return parse_listener(text, "--metrics")
    except BrokerConfigError as exc:
        raise CliError(str(exc)) from exc


def _start_observability(address: Listener | None, *, explicit: bool
                         ) -> BrokerObservability | None:
    """The broker's ``/metrics`` and ``/health``, open before the log is recovered. The
    default port being taken (another stack on this machine) only costs the metrics, with
    a warning; a port the user gave must work."""
    from core.broker.config import BrokerConfigError
    from core.broker.observability import BrokerObservability

    if address is None:
        return None
    try:
        observability = BrokerObservability(address.host, address.port)
    except OSError as exc:
        if explicit:
            raise BrokerConfigError(f"--metrics {address}: cannot listen: "
                                    f"{exc.strerror or exc}") from exc
        log.warning("no broker metrics: cannot listen on %s (%s); give --metrics HOST:PORT",
                    address, exc.strerror or exc)
        return None
    observability.start()
    return observability


async def _run(data_dir: str, config: BrokerConfig, listen: Listener,
               advertised: Listener | None, args: argparse.Namespace,
               observability: BrokerObservability | None) -> None:
    from core.broker.server import serve, stop_on_signals

    # Signals are caught before opening, so a SIGTERM during recovery still closes cleanly.
    stop = stop_on_signals()
    owner = {"command": "ferry up", "listener": str(listen)}
    with storage_errors():
        runtime = await asyncio.to_thread(acquire_runtime, data_dir, dict(config.raw), owner)
    try:
        topics = [t for t in runtime.manager.topics() if not runtime.manager.topic(t).internal]
        log.info("commit log ready at %s with %d topic%s (pid %d)", data_dir, len(topics),
                 "" if len(topics) == 1 else "s", os.getpid())
        running: list[tuple[str, Any]] = []
        try:
            if not stop.is_set():
                if observability is not None:
                    observability.stage("starting services")
                await asyncio.to_thread(_start_services, args, data_dir, running)
            if not stop.is_set():
                await serve(config, runtime.manager, runtime.coordinator,
                            listen=listen, advertised=advertised, stop=stop,
                            tick_coordinator=False, observability=observability,
                            on_listening=lambda server: _announce(
                                server, listen, advertised, data_dir, running,
                                observability))
        finally:
            await asyncio.to_thread(_stop_services, running)
    finally:
        await asyncio.to_thread(release_runtime, runtime)
        log.info("commit log at %s closed", data_dir)


def _start_services(args: argparse.Namespace, data_dir: str,
                    running: list[tuple[str, Any]]) -> None:
    """Start each service on the stack's log, appending ``(name, service)`` to ``running``
    as it comes up, so that a later failure stops the earlier ones."""
    url = _EMBEDDED + data_dir
    for service in _services():
        started = service.start(args, url, data_dir)
        if started is not None:
            running.append((str(getattr(service, "name", type(service).__name__)), started))


def _stop_services(running: list[tuple[str, Any]]) -> None:
    for _name, service in reversed(running):
        try:
            service.stop()
        except Exception:  # stop the others and close the log regardless
            log.exception("stopping %r failed", service)


def _announce(server: Any, listen: Listener, advertised: Listener | None, data_dir: str,
              running: list[tuple[str, Any]],
              observability: BrokerObservability | None = None) -> None:
    """The one line that says the stack is ready and where everything is."""
    broker = _bound_address(server, listen)
    if advertised is not None:
        broker += f" (advertised as {advertised})"
    parts = [f"broker {broker}"]
    if observability is not None:
        parts.append(f"metrics {observability.url}/metrics")
    parts += [f"{name} {getattr(service, 'url', '') or '(running)'}"
              for name, service in running]
    parts += [f"data {os.path.abspath(data_dir)}", f"logs {logging_summary()}"]
    log.info("ferry up ready: %s; stop with Ctrl-C or SIGTERM", ", ".join(parts))


def _bound_address(server: Any, listen: Listener) -> str:
    """``HOST:PORT`` the broker really listens on (the port may have been 0)."""
    host = f"[{listen.host}]" if ":" in listen.host else listen.host
    return f"{host}:{server.port}"
