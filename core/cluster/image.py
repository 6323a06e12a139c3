"""The metadata image: what the committed (or, on the controller, appended) metadata log
says, built by applying records in log order. Brokers answer Metadata from it; the
controller decides from it. Applying is deterministic, so every node that applied the same
prefix holds the same image."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.cluster.records import (
    NO_LEADER,
    AddPartitions,
    CreateTopic,
    FenceBroker,
    MetadataRecord,
    PartitionChange,
    PartitionSpec,
    RegisterBroker,
    RemoveTopic,
    UnfenceBroker,
)

__all__ = ["BrokerState", "MetadataImage", "TopicState"]


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
