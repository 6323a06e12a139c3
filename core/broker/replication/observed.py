"""What a cluster node shows on ``/metrics`` and ``/health`` beyond a single node's.

``replica_counts`` gives Kafka's ReplicaManager and KafkaController gauges from the
replicas this broker holds (a single node leads all of its partitions, alone in their
ISRs); ``ClusterHealth`` adds KIP-1017's states for the cluster: ``starting`` until the
controller has registered and unfenced the broker, ``unhealthy`` once the controller has
not accepted a heartbeat for ``broker.session.timeout.ms`` (it fences such a broker).
Both run on the HTTP thread: they read plain attributes and copies, never await.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.cluster.records import NO_LEADER
from core.http.observability import Health

if TYPE_CHECKING:
    from core.broker.replication.manager import ReplicaManager
    from core.cluster.service import BrokerLease

__all__ = ["ClusterHealth", "ReplicaCounts", "replica_counts"]


@dataclass(frozen=True)
class ReplicaCounts:
    partitions: int  # replicas on this broker
    leaders: int  # of which this broker leads
    under_replicated: int  # led here, ISR smaller than the replica set
    under_min_isr: int  # led here, ISR below the topic's min.insync.replicas
    isr_shrinks: int
    isr_expands: int
    active_controller: int  # 1 on the active controller
    offline: int  # partitions without a leader (the active controller's view, else 0)

    @classmethod
    def single_node(cls, partitions: int) -> ReplicaCounts:
        """A single node leads every partition with itself the only in-sync replica."""
        return cls(partitions, partitions, 0, 0, 0, 0, 1, 0)


def replica_counts(replicas: ReplicaManager) -> ReplicaCounts:
    leaders = under_replicated = under_min = 0
    held = list(replicas.replicas.values())  # one C-level copy: the loop thread adds
    for replica in held:
        leader = replica.leader
        if leader is None:
            continue
        leaders += 1
        if len(leader.isr) < len(leader.replicas):
            under_replicated += 1
        if leader.under_min_isr:
            under_min += 1
    active = replicas.controller_id() == replicas.node_id
    offline = 0
    if active:
        for topic in list(replicas.image.topics.values()):
            offline += sum(spec.leader == NO_LEADER for spec in list(topic.partitions))
    return ReplicaCounts(len(held), leaders, under_replicated, under_min,
                         replicas.isr_shrinks, replicas.isr_expands, int(active), offline)


class ClusterHealth:
    """The cluster part of a node's ``/health``: None when it has nothing to add."""

    def __init__(self, node_id: int, lease: BrokerLease,
                 replicas: Callable[[], ReplicaManager | None], session_timeout_ms: int
                 ) -> None:
        self._node_id = node_id
        self._lease = lease
        self._replicas = replicas
        self._timeout_s = session_timeout_ms / 1000

    def __call__(self) -> Health | None:
        lease = self._lease
        contact = lease.last_contact
        if lease.epoch is None and contact is None:
            return Health.starting("broker is starting: registering with the controller")
        if contact is not None:
            silent = time.monotonic() - contact
            if silent > self._timeout_s:
                return Health.unhealthy(
                    f"the controller has not answered for {silent:.0f} s (more than "
                    f"broker.session.timeout.ms={self._timeout_s * 1000:.0f}): this broker "
                    "is fenced and serves no partition")
        replicas = self._replicas()
        if replicas is None:
            return Health.starting("broker is starting: opening the listener")
        broker = replicas.image.brokers.get(self._node_id)
        if broker is None or broker.fenced:
            return Health.starting("broker is starting: catching up with the metadata "
                                   "before the controller unfences it")
        return None
