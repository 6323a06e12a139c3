"""The metadata image: what the committed (or, on the controller, appended) metadata log
says, built by applying records in log order. Brokers answer Metadata from it; the
controller decides from it. Applying is deterministic, so every node that applied the same
prefix holds the same image.

The security metadata (ACLs, SCRAM credentials, client quotas) is copy-on-write: a change
replaces the dict rather than mutating it, so a request thread that took ``acls``,
``scram`` or ``quotas`` reads a consistent snapshot while the event loop applies records;
each has a version that grows with every change, which the broker's authorizer, SCRAM
store and quota manager compare to know when to reload."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.cluster.records import (
    NO_LEADER,
    AccessControlEntry,
    AddPartitions,
    ClientQuota,
    CreateTopic,
    FenceBroker,
    MetadataRecord,
    PartitionChange,
    PartitionSpec,
    RegisterBroker,
    RemoveAccessControlEntry,
    RemoveTopic,
    RemoveUserScramCredential,
    UnfenceBroker,
    UserScramCredential,
)

__all__ = ["BrokerState", "MetadataImage", "QuotaEntity", "TopicState"]

#: sorted (entity type, name or None for the default) pairs, as ClientQuota names them
QuotaEntity = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class BrokerState:
    registration: RegisterBroker
    broker_epoch: int
    fenced: bool


@dataclass
class TopicState:
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionSpec]


@dataclass
class MetadataImage:
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    topics: dict[str, TopicState] = field(default_factory=dict)
    #: the log index of the last record applied
    offset: int = 0
    #: ACL id -> entry (replaced, never mutated, on a change)
    acls: dict[str, AccessControlEntry] = field(default_factory=dict)
    #: user -> mechanism -> credential (replaced on a change)
    scram: dict[str, dict[str, UserScramCredential]] = field(default_factory=dict)
    #: entity -> quota key -> value (replaced on a change)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    #: bumped by every change of acls, scram, quotas
    acls_version: int = 0
    scram_version: int = 0
    quotas_version: int = 0

    def apply(self, index: int, record: MetadataRecord) -> None:
        """Apply the record at log ``index`` (indexes never go back; the records of one
        entry share its index)."""
        if index < self.offset:
            raise ValueError(f"record {index} applied after {self.offset}")
        self.offset = index
        if isinstance(record, RegisterBroker):
            self.brokers[record.broker_id] = BrokerState(record, index, fenced=True)
        elif isinstance(record, (FenceBroker, UnfenceBroker)):
            broker = self.brokers.get(record.broker_id)
            if broker is not None and broker.broker_epoch == record.broker_epoch:
                self.brokers[record.broker_id] = replace(
                    broker, fenced=isinstance(record, FenceBroker))
        elif isinstance(record, CreateTopic):
            if record.name not in self.topics:
                self.topics[record.name] = TopicState(record.topic_id, dict(record.configs),
                                                      list(record.partitions))
        elif isinstance(record, PartitionChange):
            topic = self.topics.get(record.topic)
            if topic is not None and 0 <= record.partition < len(topic.partitions):
                old = topic.partitions[record.partition]
                topic.partitions[record.partition] = PartitionSpec(
                    old.replicas, record.isr, record.leader, record.leader_epoch,
                    record.partition_epoch)
        elif isinstance(record, RemoveTopic):
            self.topics.pop(record.name, None)
        elif isinstance(record, AddPartitions):
            topic = self.topics.get(record.name)
            if topic is not None:
                topic.partitions.extend(record.partitions)
        else:
            self._apply_security(record)

    def _apply_security(self, record: MetadataRecord) -> None:
        if isinstance(record, AccessControlEntry):
            self.acls = {**self.acls, record.id: record}
            self.acls_version += 1
        elif isinstance(record, RemoveAccessControlEntry):
            if record.id in self.acls:
                self.acls = {k: v for k, v in self.acls.items() if k != record.id}
                self.acls_version += 1
        elif isinstance(record, UserScramCredential):
            user = {**self.scram.get(record.name, {}), record.mechanism: record}
            self.scram = {**self.scram, record.name: user}
            self.scram_version += 1
        elif isinstance(record, RemoveUserScramCredential):
            user = {m: c for m, c in self.scram.get(record.name, {}).items()
                    if m != record.mechanism}
            scram = {u: c for u, c in self.scram.items() if u != record.name}
            if user:
                scram[record.name] = user
            self.scram = scram
            self.scram_version += 1
        elif isinstance(record, ClientQuota):
            values = dict(self.quotas.get(record.entity, {}))
            if record.remove:
                values.pop(record.key, None)
            else:
                values[record.key] = float(record.value)
            quotas = {e: v for e, v in self.quotas.items() if e != record.entity}
            if values:
                quotas[record.entity] = values
            self.quotas = quotas
            self.quotas_version += 1

    def live_brokers(self) -> list[int]:
        """Ids of registered, unfenced brokers, ascending."""
        return sorted(b for b, state in self.brokers.items() if not state.fenced)

    def partition(self, topic: str, partition: int) -> PartitionSpec | None:
        state = self.topics.get(topic)
        if state is None or not 0 <= partition < len(state.partitions):
            return None
        return state.partitions[partition]

    def leader_of(self, topic: str, partition: int) -> int:
        spec = self.partition(topic, partition)
        return spec.leader if spec is not None else NO_LEADER
