"""``ferry broker --config FILE`` when the file names ``process.roles``: one cluster node.

It runs, on one event loop, the metadata quorum (a controller, ``ClusterService``) or its
observer (a broker-only node, ``MetadataObserver``), the Kafka listener (the broker of
``core.broker.server``), and the ReplicaManager that applies the committed metadata to
this broker's replicas. Stopping (SIGTERM/SIGINT) closes them in the reverse order. With
``--metrics`` it serves ``/metrics`` and ``/health`` as a single node does (the port opens
before recovery), with the cluster's replica counts and states.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
from pathlib import Path

from core.broker.config import BrokerConfig
from core.broker.observability import BrokerObservability
from core.broker.replication.groups import coordinate_groups, create_offsets_topic
from core.broker.replication.manager import ReplicaManager
from core.broker.replication.observed import ClusterHealth
from core.broker.security.inter_broker import inter_broker_security
from core.broker.security.metadata_control import security_operation
from core.broker.security.metadata_store import MetadataSecurityStore
from core.broker.server import (
    BrokerServer,
    Listener,
    open_storage,
    serve,
    start_observability,
    stop_on_signals,
)
from core.cluster.config import ClusterConfig
from core.cluster.observer import MetadataObserver
from core.cluster.service import ClusterService

__all__ = ["cluster_id_of", "run_cluster_broker"]

log = logging.getLogger(__name__)


def cluster_id_of(config: ClusterConfig) -> str:
    """One cluster id for every node, derived from the quorum they share (Kafka formats
    each node's storage with the same id; here the voters name the cluster)."""
    quorum = ",".join(f"{v.node_id}@{v.host}:{v.port}" for v in config.voters) or ",".join(
        f"{h}:{p}" for h, p in config.bootstrap_servers)
    digest = hashlib.sha256(quorum.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def run_cluster_broker(config: BrokerConfig, cluster: ClusterConfig,
                       metrics: Listener | None = None) -> None:
    """Serve until SIGTERM/SIGINT; ``/metrics`` and ``/health`` on ``metrics`` when given.
    Raises BrokerConfigError or StorageError."""
    observability = start_observability(metrics)
    try:
        asyncio.run(_run(config, cluster, observability))
    finally:
        if observability is not None:
            observability.stop()


async def _run(config: BrokerConfig, cluster: ClusterConfig,
               observability: BrokerObservability | None) -> None:
    stop = stop_on_signals()
    data_dir = Path(cluster.log_dir)
    # Every listener but the controller's serves clients, with its protocol's TLS and
    # SASL, as on a single node (``serve`` opens them all); the first one is ``listen``.
    first = next(e for e in cluster.listeners if e.name not in cluster.controller_listener_names)
    listen = Listener(first.host, first.port)
    shown = next((e for e in cluster.advertised_listeners if e.name == first.name), first)
    advertised = Listener(shown.host, shown.port)
    # A bad inter-broker security setting stops the node now, naming the key.
    inter_broker = inter_broker_security(config.raw, cluster.inter_broker_listener_name)
    owner = {"command": "ferry broker (cluster node)", "listener": str(advertised)}
    manager, coordinator = await asyncio.to_thread(open_storage, config, data_dir, owner)
    quorum: ClusterService | MetadataObserver = (
        ClusterService(cluster, operations=security_operation) if cluster.voters
        else MetadataObserver(cluster))
    if observability is not None:
        observability.cluster_check = ClusterHealth(
            cluster.node_id, quorum.lease, lambda: replicas,
            cluster.broker_session_timeout_ms)
    replicas: ReplicaManager | None = None
    tasks: list[asyncio.Task[None]] = []
    try:
        await quorum.start()

        def controller_id() -> int | None:
            if isinstance(quorum, ClusterService):
                return quorum.quorum.raft.leader_id
            return None

        def on_listening(server: BrokerServer) -> None:
            nonlocal replicas
            replicas = ReplicaManager(cluster, server.state, lambda: quorum.image,
                                      quorum.submit, lambda: quorum.lease.epoch,
                                      controller_id, inter_broker)
            server.state.replicas = replicas
            server.state.cluster_id = cluster_id_of(cluster)
            coordinate_groups(replicas, coordinator)
            replicas.start()
            tasks.append(asyncio.create_task(create_offsets_topic(config, cluster, replicas),
                                             name="ferry-offsets-topic"))

        def caught_up() -> bool:  # Kafka's rule: applied up to its own registration
            epoch = quorum.lease.epoch
            return epoch is not None and quorum.applied >= epoch

        # ACLs, SCRAM credentials and quotas live in the cluster metadata, not in files.
        security = MetadataSecurityStore(lambda: quorum.image, lambda: quorum.applied,
                                         quorum.submit, caught_up)
        if not stop.is_set():
            await serve(config, manager, coordinator,
                        listen=listen, advertised=advertised, stop=stop,
                        on_listening=on_listening, observability=observability,
                        metadata_security=security)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if replicas is not None:
            await replicas.stop()
        await quorum.stop()
        coordinator.close()
        await asyncio.to_thread(manager.close)
        log.info("cluster node %d stopped; data directory %s closed", cluster.node_id,
                 data_dir)

