"""The active controller's decisions, as metadata records to append (sans-IO).

Only the controller changes leadership, the ISR and broker fencing, and only by appending a
record through ``append`` (which puts it in the Raft log and applies it to ``image`` at its
index); every decision reads ``image``, which on the controller includes the records it has
appended but not yet seen committed, so two decisions never contradict each other. Each
operation returns the log index the caller waits to see committed before answering. Rules
(Kafka's, see docs/architecture.md): a new leader comes from the ISR only (unless
``unclean.leader.election.enable``); a new leader bumps the leader epoch, fencing the old
one; every change bumps the partition epoch, which AlterPartition must name (compare and
set); a broker whose lease (its heartbeats) lapses is fenced and leaves every ISR, except
that the last ISR member stays so the data's last home is known.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from core.cluster.image import MetadataImage
from core.cluster.records import (
    NO_LEADER,
    AddPartitions,
    BrokerEndpoint,
    CreateTopic,
    FenceBroker,
    MetadataRecord,
    PartitionChange,
    PartitionSpec,
    RegisterBroker,
    RemoveTopic,
    UnfenceBroker,
)

__all__ = ["ControllerError", "ErrorCode", "QuorumController", "place_replicas"]


class ErrorCode:
    """Kafka's error codes for the answers the controller gives."""

    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_REQUEST = 42
    INVALID_REPLICA_ASSIGNMENT = 39
    NOT_LEADER_OR_FOLLOWER = 6
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    NOT_CONTROLLER = 41
    FENCED_LEADER_EPOCH = 74
    STALE_BROKER_EPOCH = 77
    BROKER_ID_NOT_REGISTERED = 102
    INELIGIBLE_REPLICA = 107
    INVALID_UPDATE_VERSION = 108


class ControllerError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def place_replicas(brokers: list[int], partitions: int, replication_factor: int,
                   start: int) -> list[tuple[int, ...]]:
    """Kafka's rack-unaware assignment: partition p's leader is broker (start + p) mod n, and
    its followers follow at a shift that grows every n partitions, so leaders and followers
    both spread over the brokers."""
    n = len(brokers)
    placement = []
    for p in range(partitions):
        first = (start + p) % n
        shift = 1 + (p // n) % (n - 1) if n > 1 else 0
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift - 1 + j) % (n - 1)) % n])
        placement.append(tuple(replicas))
    return placement


@dataclass
class QuorumController:
    image: MetadataImage
    append: Callable[[MetadataRecord], int]
    session_timeout_ms: int
    default_replication_factor: int = 1
    unclean_leader_election: bool = False
    rng: random.Random | None = None

    def __post_init__(self) -> None:
        self._lease_expiry: dict[int, int] = {}
        self._rng = self.rng or random.Random()
        self._last = 0

    def _emit(self, record: MetadataRecord) -> None:
        self._last = self.append(record)

    def append_all(self, records: list[MetadataRecord]) -> int | None:
        """Append ``records``; the index of the last, or None when there were none (the
        caller then waits for what was decided before: nothing new needs committing)."""
        for record in records:
            self._emit(record)
        return self._last if records else None

    def new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    # -- brokers --------------------------------------------------------------------------

    def register_broker(self, broker_id: int, incarnation: str,
                        endpoints: tuple[BrokerEndpoint, ...], rack: str | None, now_ms: int
                        ) -> int:
        """A broker starts (or restarts): it is registered fenced, with a fresh lease; the
        partitions it led move away by the fencing that follows a re-registration."""
        old = self.image.brokers.get(broker_id)
        if old is not None and not old.fenced:
            self._fence(broker_id, old.broker_epoch)
        self._emit(RegisterBroker(broker_id, incarnation, endpoints, rack))
        self._lease_expiry[broker_id] = now_ms + self.session_timeout_ms
        return self._last

    def heartbeat(self, broker_id: int, broker_epoch: int, caught_up: bool, now_ms: int
                  ) -> int:
        """Renew the lease; a fenced broker that has caught up with the metadata log is
        unfenced, and leads partitions that had no leader while it was away."""
        state = self.image.brokers.get(broker_id)
        if state is None:
            raise ControllerError(ErrorCode.BROKER_ID_NOT_REGISTERED,
                                  f"broker {broker_id} is not registered")
        if state.broker_epoch != broker_epoch:
            raise ControllerError(ErrorCode.STALE_BROKER_EPOCH,
                                  f"broker {broker_id} epoch {broker_epoch} is not the "
                                  f"registered {state.broker_epoch}; register again")
        self._lease_expiry[broker_id] = now_ms + self.session_timeout_ms
        if state.fenced and caught_up:
            self._emit(UnfenceBroker(broker_id, broker_epoch))
            self._elect_leaderless(broker_id)
        return self._last

    def expire_leases(self, now_ms: int) -> int:
        """Fence every unfenced broker whose lease lapsed (a broker the controller has not
        heard from since it took office gets one session timeout from then)."""
        for broker_id, state in sorted(self.image.brokers.items()):
            expiry = self._lease_expiry.setdefault(broker_id, now_ms + self.session_timeout_ms)
            if not state.fenced and now_ms >= expiry:
                self._fence(broker_id, state.broker_epoch)
        return self._last

    def _fence(self, broker_id: int, broker_epoch: int) -> None:
        self._emit(FenceBroker(broker_id, broker_epoch))
        live = set(self.image.live_brokers())
        for name, topic in sorted(self.image.topics.items()):
            for p, spec in enumerate(topic.partitions):
                if broker_id not in spec.isr and spec.leader != broker_id:
                    continue
                isr = tuple(r for r in spec.isr if r != broker_id) or spec.isr
                leader = spec.leader
                if leader in (broker_id, NO_LEADER):
                    leader, isr = self._choose_leader(spec, isr, live)
                if (leader, isr) != (spec.leader, spec.isr):
                    self._emit(_change(name, p, spec, leader, isr))

    def _choose_leader(self, spec: PartitionSpec, isr: tuple[int, ...], live: set[int]
                       ) -> tuple[int, tuple[int, ...]]:
        for replica in spec.replicas:  # the preferred order: the first live ISR member
            if replica in isr and replica in live:
                return replica, isr
        if self.unclean_leader_election:
            for replica in spec.replicas:
                if replica in live:
                    return replica, (replica,)
        return NO_LEADER, isr

    def _elect_leaderless(self, broker_id: int) -> None:
        live = set(self.image.live_brokers())
        for name, topic in sorted(self.image.topics.items()):
            for p, spec in enumerate(topic.partitions):
                if spec.leader == NO_LEADER and broker_id in spec.replicas:
                    leader, isr = self._choose_leader(spec, spec.isr, live)
                    if leader != NO_LEADER:
                        self._emit(_change(name, p, spec, leader, isr))

    # -- topics and partitions ------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int | None,
                     configs: dict[str, str]) -> int:
        rf = replication_factor if replication_factor not in (None, -1) \
            else self.default_replication_factor
        if name in self.image.topics:
            raise ControllerError(ErrorCode.TOPIC_ALREADY_EXISTS,
                                  f"Topic '{name}' already exists.")
        if partitions < 1:
            raise ControllerError(ErrorCode.INVALID_PARTITIONS,
                                  "Number of partitions must be larger than 0.")
        live = self.image.live_brokers()
        if rf < 1 or rf > len(live):
            raise ControllerError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {rf} time(s): The target replication "
                f"factor of {rf} cannot be reached because only {len(live)} broker(s) are "
                "registered.")
        start = self._rng.randrange(len(live))
        specs = tuple(PartitionSpec(replicas, replicas, replicas[0])
                      for replicas in place_replicas(live, partitions, rf, start))
        topic_id = self.new_id()
        self._emit(CreateTopic(name, topic_id, specs, dict(configs)))
        return self._last

    def add_partitions(self, name: str, total: int,
                       assignments: list[list[int]] | None = None) -> int:
        """Grow ``name`` to ``total`` partitions, placed as a new topic's are (or on the
        given replicas: each list's first broker leads)."""
        topic = self.image.topics.get(name)
        if topic is None:
            raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  "This server does not host this topic-partition.")
        current = len(topic.partitions)
        if total <= current:
            raise ControllerError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic already has {current} partitions." if total == current else
                f"Topic currently has {current} partitions, which is higher than the "
                f"requested {total}.")
        live = self.image.live_brokers()
        if assignments is None:
            rf = len(topic.partitions[0].replicas)
            if rf > len(live):
                raise ControllerError(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {rf} time(s): only {len(live)} "
                    "broker(s) are registered.")
            start = self._rng.randrange(len(live))
            placed = place_replicas(live, total - current, rf, start)
        else:
            if len(assignments) != total - current or any(
                    not a or len(set(a)) != len(a) or set(a) - set(live) for a in assignments):
                raise ControllerError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                      f"Invalid assignments {assignments} for "
                                      f"{total - current} new partition(s) on live brokers "
                                      f"{live}.")
            placed = [tuple(a) for a in assignments]
        self._emit(AddPartitions(name, tuple(PartitionSpec(tuple(r), tuple(r), r[0])
                                             for r in placed)))
        return self._last

    def delete_topic(self, name: str) -> int:
        """Remove a topic (Kafka's RemoveTopicRecord); each broker deletes its replicas when
        it applies the record."""
        if name not in self.image.topics:
            raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  "This server does not host this topic-partition.")
        self._emit(RemoveTopic(name))
        return self._last

    def alter_partition(self, broker_id: int, broker_epoch: int, topic: str, partition: int,
                        leader_epoch: int, partition_epoch: int, new_isr: tuple[int, ...]
                        ) -> int:
        """A partition leader asks to shrink or expand its ISR (Kafka's AlterPartition)."""
        state = self.image.brokers.get(broker_id)
        if state is None or state.broker_epoch != broker_epoch:
            raise ControllerError(ErrorCode.STALE_BROKER_EPOCH,
                                  f"broker {broker_id} epoch {broker_epoch} is stale")
        spec = self.image.partition(topic, partition)
        if spec is None:
            raise ControllerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"{topic}-{partition} does not exist")
        if spec.leader != broker_id:
            raise ControllerError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  f"broker {broker_id} does not lead {topic}-{partition}")
        if leader_epoch != spec.leader_epoch:
            raise ControllerError(ErrorCode.FENCED_LEADER_EPOCH,
                                  f"leader epoch {leader_epoch} is not {spec.leader_epoch}")
        if partition_epoch != spec.partition_epoch:
            raise ControllerError(ErrorCode.INVALID_UPDATE_VERSION,
                                  f"partition epoch {partition_epoch} is not "
                                  f"{spec.partition_epoch}")
        live = set(self.image.live_brokers())
        if broker_id not in new_isr or not set(new_isr) <= set(spec.replicas):
            raise ControllerError(ErrorCode.INELIGIBLE_REPLICA,
                                  f"ISR {list(new_isr)} must hold the leader and only replicas")
        added = set(new_isr) - set(spec.isr)
        if added - live:
            raise ControllerError(ErrorCode.INELIGIBLE_REPLICA,
                                  f"fenced broker(s) {sorted(added - live)} cannot join the ISR")
        self._emit(_change(topic, partition, spec, spec.leader, tuple(new_isr)))
        return self._last


def _change(topic: str, partition: int, spec: PartitionSpec, leader: int,
            isr: tuple[int, ...]) -> PartitionChange:
    leader_epoch = spec.leader_epoch + 1 if leader != spec.leader else spec.leader_epoch
    return PartitionChange(topic, partition, leader, leader_epoch, isr,
                           spec.partition_epoch + 1)
