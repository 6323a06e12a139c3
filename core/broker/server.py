"""The broker process: storage, coordinator and producer state behind one TCP listener.

``run_broker`` is ``ferry broker``: it opens the data directory (LogManager with topic
defaults from the config, GroupCoordinator on ``__consumer_offsets``), serves until SIGTERM
or SIGINT, then stops accepting, closes every connection, waits for appends in flight and
closes the coordinator and the log. ``serve`` is the serving part alone, for a host that
owns the storage itself (``ferry up`` runs it on the embedded runtime's LogManager).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from core.broker.acceptor import Acceptor
from core.broker.config import BrokerConfig, BrokerConfigError
from core.broker.connection import BrokerConnection, ConnectionLimits, close_worker_loops
from core.broker.connection_quotas import ConnectionQuotas
from core.broker.dynamic_config import DynamicBrokerConfigs
from core.broker.log_limit import RateLimitedLog, limit_loop_exceptions
from core.broker.memory import tune_malloc_for_large_buffers
from core.broker.meta import load_or_create_meta
from core.broker.observability import BrokerObservability
from core.broker.producer_state import ProducerStateManager
from core.broker.registry import all_specs, load_handlers
from core.broker.request_memory import RequestMemoryPool
from core.broker.security.authenticator import ListenerSecurity
from core.broker.security.listener_security import build_listener_security
from core.broker.security.listeners import resolve_listeners
from core.broker.security.scram_store import FileScramStore
from core.broker.security.setup import open_security
from core.broker.state import BrokerState
from core.group import GroupCoordinator, LogOffsetStore
from core.log.errors import UnknownTopicError
from core.log.manager import LogManager
from core.protocol.codec import SupportedApi

__all__ = [
    "BrokerServer",
    "Listener",
    "open_storage",
    "parse_listener",
    "run_broker",
    "serve",
    "start_observability",
    "stop_on_signals",
]

log = logging.getLogger(__name__)

_TICK_INTERVAL_S = 0.1
_PRODUCER_EXPIRY_CHECK_S = 600.0  # Kafka's producer.id.expiration.check.interval.ms
_IDLE_CHECK_S = 1.0


@dataclass(frozen=True)
class Listener:
    """A host and port to listen on or to advertise."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_listener(text: str, what: str = "--listen") -> Listener:
    """``HOST:PORT``, ``[IPv6]:PORT`` or Kafka's ``NAME://HOST:PORT`` (the first listener
    of a comma-separated list; its security is core.broker.security's concern). Raises
    BrokerConfigError."""
    item = text.split(",")[0].strip()
    _scheme, sep, rest = item.partition("://")
    if sep:
        item = rest
    host, sep, port = item.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise BrokerConfigError(f"{what} {text!r} is not of the form HOST:PORT")
    return Listener(host, int(port))


def open_storage(config: BrokerConfig, data_dir: Path, owner: dict[str, object]
                 ) -> tuple[LogManager, GroupCoordinator]:
    """Open (recover) the data directory and load the group coordinator's offsets."""
    manager = LogManager.open(
        data_dir, defaults=config.topic_defaults, owner=owner,
        retention_check_interval_ms=config.log_retention_check_interval_ms,
        cleaner_backoff_ms=config.log_cleaner_backoff_ms)
    try:
        coordinator = GroupCoordinator(
            LogOffsetStore(manager, partitions=config.offsets_topic_num_partitions),
            group_initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms=config.group_min_session_timeout_ms,
            group_max_session_timeout_ms=config.group_max_session_timeout_ms,
            group_max_size=config.group_max_size,
            offsets_retention_ms=config.offsets_retention_minutes * 60000,
            offset_metadata_max_bytes=config.offset_metadata_max_bytes,
            offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
            partition_exists=_partition_exists(manager),
        )
        coordinator.load()
    except BaseException:
        manager.close()
        raise
    return manager, coordinator


def _partition_exists(manager: LogManager) -> Callable[[str, int], bool]:
    def exists(topic: str, partition: int) -> bool:
        try:
            manager.log(topic, partition)
        except UnknownTopicError:
            return False
        return True

    return exists


class BrokerServer:
    """Accepts connections for one BrokerState and runs the periodic work (coordinator
    ticks when ``tick_coordinator``, producer expiry). ``start`` then ``stop``."""

    def __init__(self, state: BrokerState, listen: Listener, *,
                 tick_coordinator: bool = True,
                 listeners: Sequence[ListenerSecurity] = ()) -> None:
        """``listeners``: the named listeners to open (then ``listen`` is not used);
        none: one PLAINTEXT listener on ``listen``."""
        self.state = state
        self._listen = listen
        self._tick_coordinator = tick_coordinator
        self._listeners = list(listeners)
        self._acceptors: list[Acceptor] = []
        self._connections: set[BrokerConnection] = set()
        self._periodic: asyncio.Task[None] | None = None
        self._limits: ConnectionLimits | None = None

    @property
    def connection_count(self) -> int:
        """Open client connections."""
        return len(self._connections)

    @property
    def port(self) -> int:
        """The bound port of the first listener (useful when listening on port 0)."""
        assert self._acceptors, "start() first"
        return self._acceptors[0].port

    def listener_ports(self) -> dict[str, int]:
        """Listener name -> bound port."""
        return {security.name: acceptor.port
                for security, acceptor in zip(self._listeners, self._acceptors, strict=False)}

    async def start(self) -> None:
        load_handlers()
        supported = {spec.api_key: SupportedApi(spec.request_class, spec.min_version,
                                                spec.max_version) for spec in all_specs()}
        loop = asyncio.get_running_loop()
        config = self.state.config
        # 20 lines of each kind per 10 s: every bad request of an ordinary day is logged,
        # a flood is summarised.
        warnings = RateLimitedLog(log, burst=20, interval_s=10.0)
        limit_loop_exceptions(loop, warnings)
        # One thread: large requests wait for each other there, never for the loop, and
        # together they cannot take more than one thread's share of the interpreter.
        limits = self._limits = ConnectionLimits(
            memory=RequestMemoryPool(config.queued_max_request_bytes),
            quotas=ConnectionQuotas(config.max_connections, config.max_connections_per_ip),
            worker=ThreadPoolExecutor(max_workers=1,
                                      thread_name_prefix="ferry-broker-large-requests"),
            warnings=warnings)
        limits.quotas.follow(lambda: self.state.config)  # AlterConfigs may replace it
        log.debug("connection limits: %d file descriptors, %d kept for the log",
                  limits.quotas.fds.limit, limits.quotas.fds.reserve)

        def opener(security: ListenerSecurity | None) -> Callable[[str], BrokerConnection]:
            def connect(address: str) -> BrokerConnection:
                connection = BrokerConnection(self.state, supported, self._connections.discard,
                                              limits, address, security)
                self._connections.add(connection)
                return connection

            return connect

        def handshake_failed(security: ListenerSecurity
                             ) -> Callable[[str, Exception, object], None]:
            def failed(address: str, exc: Exception, protocol: object) -> None:
                self._connections.discard(protocol)  # type: ignore[arg-type]
                security.counts.failed += 1
                warnings.warning("tls", "Failed authentication with %s (listener %s, TLS "
                                 "handshake): %s", address, security.name, exc)

            return failed

        for security in self._listeners or [None]:
            host, port = (security.spec.host, security.spec.port) if security \
                else (self._listen.host, self._listen.port)
            tls = security.tls if security is not None else None
            acceptor = Acceptor(
                host, port, quotas=limits.quotas, warnings=warnings,
                protocol_factory=opener(security),
                tls=(lambda tls=tls: tls.context) if tls is not None else None,  # type: ignore[misc]
                on_handshake_failure=handshake_failed(security) if tls is not None else None)
            try:
                acceptor.start()
            except BaseException:
                for started in self._acceptors:
                    started.close()
                raise
            self._acceptors.append(acceptor)
        self._periodic = loop.create_task(self._run_periodic(), name="ferry-broker-periodic")

    async def stop(self) -> None:
        """Stop accepting, close every connection, wait for their tasks and for appends
        still running on threads."""
        for acceptor in self._acceptors:
            acceptor.close()
        for acceptor in self._acceptors:
            await acceptor.wait_closed()
        if self._periodic is not None:
            self._periodic.cancel()
            await asyncio.gather(self._periodic, return_exceptions=True)
        connections = list(self._connections)
        for connection in connections:
            connection.close()
        await asyncio.gather(*(c.wait_closed() for c in connections), return_exceptions=True)
        if self._limits is not None:
            worker = self._limits.worker
            await asyncio.wrap_future(worker.submit(close_worker_loops))
            worker.shutdown(wait=False)
        await asyncio.to_thread(self.state.appender.close)

    def _close_idle_connections(self) -> None:
        """Kafka's connections.max.idle.ms: a connection that neither sent nor received for
        that long is closed (clients reconnect when they next need it). It also ends a
        client that sent part of a request and stopped, freeing the memory it held."""
        limit_s = self.state.config.connections_max_idle_ms / 1000
        now = time.monotonic()
        for connection in list(self._connections):
            if connection.idle_for(now) > limit_s:
                log.debug("closing connection from %s: idle for more than %d ms",
                          connection.peer, self.state.config.connections_max_idle_ms)
                connection.close()

    async def _run_periodic(self) -> None:
        next_expiry = time.monotonic() + _PRODUCER_EXPIRY_CHECK_S
        next_idle_check = time.monotonic()
        while True:
            slept = time.monotonic()
            await asyncio.sleep(_TICK_INTERVAL_S)
            metrics = self.state.metrics
            if metrics is not None:  # how late the loop woke us: its saturation
                metrics.last_tick = time.monotonic()
                metrics.event_loop_lag_s = max(
                    0.0, metrics.last_tick - slept - _TICK_INTERVAL_S)
            try:
                if time.monotonic() >= next_idle_check:
                    next_idle_check = time.monotonic() + _IDLE_CHECK_S
                    self._close_idle_connections()
                    for security in self._listeners:  # certificates changed (file or
                        if security.tls is not None:  # AlterConfigs)
                            security.tls.maybe_reload(self.state.config.raw)
                if self._tick_coordinator:
                    self.state.coordinator.tick()
                if time.monotonic() >= next_expiry:
                    next_expiry = time.monotonic() + _PRODUCER_EXPIRY_CHECK_S
                    removed = self.state.producers.expire()
                    if removed:
                        log.info("forgot %d idle idempotent producers", removed)
            except Exception:  # periodic work must outlive one failure
                log.exception("periodic broker work failed")


async def serve(config: BrokerConfig, manager: LogManager, coordinator: GroupCoordinator, *,
                listen: Listener, advertised: Listener | None, stop: asyncio.Event,
                tick_coordinator: bool = True,
                on_listening: Callable[[BrokerServer], None] | None = None,
                observability: BrokerObservability | None = None) -> None:
    """Serve the Kafka protocol on ``listen`` until ``stop`` is set; the caller owns (and
    closes) ``manager`` and ``coordinator``. ``observability`` (its ``/metrics`` and
    ``/health``) is attached once the listener is bound."""
    target = advertised or listen
    if target.host in ("", "0.0.0.0", "::"):
        raise BrokerConfigError(
            f"clients cannot connect to {target}: give --advertised-listener HOST:PORT",
            key="advertised.listeners")
    tune_malloc_for_large_buffers()
    data_dir = manager.data_dir
    cluster_id = load_or_create_meta(data_dir, config.node_id)
    # Settings made by AlterConfigs before a restart go on top of the config file's.
    dynamic = DynamicBrokerConfigs.load(data_dir, config.raw)
    if dynamic:
        config = dynamic.effective()
        manager.set_defaults(config.topic_defaults)
    producers = ProducerStateManager(data_dir, expiration_ms=config.producer_id_expiration_ms)
    started = time.monotonic()
    for topic in manager.topics():  # nothing else uses the manager yet: no races
        for partition in range(manager.topic(topic).partitions):
            producers.load(manager.log(topic, partition))
    log.debug("producer state loaded in %.0f ms", (time.monotonic() - started) * 1000)
    authorizer, quotas = open_security(config, data_dir)
    state = BrokerState(config, manager, coordinator, producers, config.node_id, target.host,
                        target.port, cluster_id, asyncio.get_running_loop(), dynamic=dynamic,
                        authorizer=authorizer, quotas=quotas)
    state.scram = FileScramStore(data_dir)
    listeners = _listeners(config, listen, advertised, state)
    server = BrokerServer(state, listen, tick_coordinator=tick_coordinator,
                          listeners=listeners)
    await server.start()
    try:
        if target.port == 0:
            state.advertised_port = server.port
        for security in listeners:
            spec = security.spec
            port = server.listener_ports()[spec.name]
            state.advertised_by_listener[spec.name] = (
                spec.advertised_host, spec.advertised_port or port)
            log.info("listener %s (%s) on %s:%d, advertised as %s:%d", spec.name,
                     spec.protocol, spec.host, port, *state.advertised_by_listener[spec.name])
        if observability is not None:
            observability.attach(state, lambda: server.connection_count)
        log.info("Kafka broker %d of cluster %s listening on %s:%d, advertised as %s:%d",
                 config.node_id, cluster_id, listen.host, server.port, state.advertised_host,
                 state.advertised_port)
        if on_listening is not None:
            on_listening(server)
        await stop.wait()
    finally:
        log.info("stopping the broker: closing connections")
        await server.stop()


def _listeners(config: BrokerConfig, listen: Listener, advertised: Listener | None,
               state: BrokerState) -> list[ListenerSecurity]:
    """The named listeners of ``config`` with their security; the first one binds
    ``listen`` (the --listen flag or the first of ``listeners``)."""
    named = "://" in str(config.raw.get("advertised.listeners", ""))
    specs = resolve_listeners(
        config.raw, listen=(listen.host, listen.port),
        advertised=None if named or advertised is None else (advertised.host, advertised.port))
    for spec in specs:
        if spec.advertised_host in ("", "0.0.0.0", "::"):
            raise BrokerConfigError(
                f"clients cannot connect to listener {spec.name} at {spec.advertised_host!r}:"
                f" name it in advertised.listeners", key="advertised.listeners")
    listeners = [build_listener_security(spec, config.raw, state.scram) for spec in specs]
    state.auth_counts = {security.name: security.counts for security in listeners}
    return listeners


def start_observability(metrics: Listener | None) -> BrokerObservability | None:
    """Serve ``/metrics`` and ``/health`` on ``metrics`` (None: not served), for a single
    node and a cluster node alike. BrokerConfigError when the port cannot be bound."""
    if metrics is None:
        return None
    try:
        observability = BrokerObservability(metrics.host, metrics.port)
    except OSError as exc:  # the port is taken, or not ours to bind
        raise BrokerConfigError(f"cannot serve metrics on {metrics}: "
                                f"{exc.strerror or exc}") from exc
    observability.start()
    return observability


def run_broker(config: BrokerConfig, data_dir: Path, listen: Listener,
               advertised: Listener | None, metrics: Listener | None = None) -> None:
    """``ferry broker``: open ``data_dir``, serve until SIGTERM/SIGINT, close everything;
    ``/metrics`` and ``/health`` on ``metrics`` when given (from before recovery).

    Raises BrokerConfigError, or StorageError if the directory cannot be opened (e.g.
    another process holds it).
    """
    observability = start_observability(metrics)
    try:
        asyncio.run(_run(config, data_dir, listen, advertised, observability))
    finally:
        if observability is not None:
            observability.stop()


async def _run(config: BrokerConfig, data_dir: Path, listen: Listener,
               advertised: Listener | None,
               observability: BrokerObservability | None) -> None:
    stop = stop_on_signals()
    owner = {"command": "ferry broker", "listener": str(advertised or listen)}
    manager, coordinator = await asyncio.to_thread(open_storage, config, data_dir, owner)
    try:
        if not stop.is_set():  # a signal during recovery: stop without serving
            await serve(config, manager, coordinator, listen=listen, advertised=advertised,
                        stop=stop, observability=observability)
    finally:
        coordinator.close()
        await asyncio.to_thread(manager.close)
        log.info("broker stopped; data directory %s closed", data_dir)


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (call on the event loop's thread)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def request(signum: int) -> None:
        log.info("%s received", signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, request, signum)
    return stop
