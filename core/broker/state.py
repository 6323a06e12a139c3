"""What every request handler sees: the broker's shared state and the request's context."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.broker.append_waiters import AppendWaiters
from core.broker.appender import Appender
from core.broker.security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from core.broker.config import BrokerConfig
    from core.broker.dynamic_config import DynamicBrokerConfigs
    from core.broker.metrics import BrokerMetrics
    from core.broker.producer_state import ProducerStateManager
    from core.broker.replication.manager import ReplicaManager
    from core.broker.security.authenticator import AuthCounts, ConnectionAuth
    from core.broker.security.authorizer import Authorizer
    from core.broker.security.metadata_store import MetadataSecurityStore
    from core.broker.security.quotas import ClientQuotaManager
    from core.broker.security.scram_store import ScramCredentialStore
    from core.group import GroupCoordinator
    from core.log.manager import LogManager

__all__ = ["BrokerState", "CloseConnection", "RequestContext"]


class CloseConnection(Exception):
    """Raised by a handler to close the request's connection without answering, as Kafka
    does for an acks=0 Produce that failed (the client then refreshes its metadata). The
    server logs the message on one line, without a traceback."""


@dataclass
class BrokerState:
    """Shared by all connections of one broker. Handlers run on the event loop thread.

    * ``manager``: the commit log (topics, partitions, appends, reads).
    * ``coordinator``: the classic group coordinator; its callbacks may fire on any thread,
      so handlers resolve futures with ``loop.call_soon_threadsafe``.
    * ``producers``: idempotent-producer state (producer ids, per-partition sequences).
    * ``node_id``, ``advertised_host``, ``advertised_port``: how clients reach this broker
      (the only broker of its cluster: leader of every partition, coordinator of every group).
    * ``appender``: runs Produce appends (inline, or on threads for partitions that fsync);
      built from ``producers`` and ``config`` when not given.
    * ``append_waiters``: where long-polling Fetch requests wait for appends.
    * ``metrics``: the data path's counters for ``/metrics`` (None: not counted).
    * ``replicas``: in a cluster, this broker's replicas (who leads, epochs, high
      watermarks; see ``core.broker.replication``); None on a single node.
    * ``dynamic``: the configs set by AlterConfigs (None: refused, as in handler tests that
      build a state by hand); ``config`` is the static settings with them on top.
    * ``authorizer``: the ACL authorizer (None: ``authorizer.class.name`` unset, everything
      allowed); handlers ask it through ``core.broker.security.access``.
    * ``quotas``: client quotas and their throttling (None: no quota is enforced).
    """

    config: BrokerConfig
    manager: LogManager
    coordinator: GroupCoordinator
    producers: ProducerStateManager
    node_id: int
    advertised_host: str
    advertised_port: int
    cluster_id: str
    loop: asyncio.AbstractEventLoop
    extras: dict[str, Any] = field(default_factory=dict)
    appender: Appender = field(default=None)  # type: ignore[assignment] # see __post_init__
    append_waiters: AppendWaiters = field(default_factory=AppendWaiters)
    dynamic: DynamicBrokerConfigs | None = None
    metrics: BrokerMetrics | None = None
    authorizer: Authorizer | None = None
    quotas: ClientQuotaManager | None = None
    #: listener name -> (host, port) given to clients that connected through it
    advertised_by_listener: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: SCRAM credentials (None: no store, as in handler tests that build a state by hand)
    scram: ScramCredentialStore | None = None
    #: listener name -> its authentication counters (for /metrics)
    auth_counts: dict[str, AuthCounts] = field(default_factory=dict)
    #: a cluster node's ACLs, SCRAM credentials and quotas (the committed metadata, changed
    #: through the active controller); None on a single node, which keeps them in files
    metadata_security: MetadataSecurityStore | None = None

    def advertised_for(self, listener: str) -> tuple[str, int]:
        """What Metadata tells a client of ``listener`` (Kafka answers per listener)."""
        return self.advertised_by_listener.get(
            listener, (self.advertised_host, self.advertised_port))
    replicas: ReplicaManager | None = None

    def __post_init__(self) -> None:
        if self.appender is None:
            self.appender = Appender(self.producers, threads=self.config.num_io_threads)


@dataclass(frozen=True)
class RequestContext:
    """One decoded request: header fields, the peer, and the kafka-python request object."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    client_host: str
    connection_id: str
    request: Any
    # Set by authentication on the connection (issue 17); anonymous until then.
    principal: KafkaPrincipal = ANONYMOUS
    listener: str = "PLAINTEXT"
    # The connection's authentication state (SaslHandshake/SaslAuthenticate use it).
    auth: ConnectionAuth | None = None
