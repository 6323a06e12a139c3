"""The metadata records the quorum replicates, after KRaft's (``RegisterBrokerRecord``,
``FenceBrokerRecord``, ``TopicRecord`` + ``PartitionRecord``, ``PartitionChangeRecord``,
``RemoveTopicRecord``). Each is one Raft entry, encoded as a JSON object with a ``type``;
the metadata log is small, so readability wins over size. The records of one controller
decision (a fencing and the leader changes it causes) travel as one entry, a JSON array,
so no node ever applies half of a decision.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "NO_LEADER",
    "AddPartitions",
    "BrokerEndpoint",
    "CreateTopic",
    "FenceBroker",
    "MetadataRecord",
    "PartitionChange",
    "PartitionSpec",
    "RecordDecodeError",
    "RegisterBroker",
    "RemoveTopic",
    "UnfenceBroker",
    "decode",
    "decode_batch",
    "encode",
    "encode_batch",
]

NO_LEADER = -1


class RecordDecodeError(Exception):
    """A metadata log entry is not a record this version knows."""


@dataclass(frozen=True)
class BrokerEndpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True)
class RegisterBroker:
    """A broker (re)joins, fenced until it has caught up. Its broker epoch is the log index
    of this record, so every registration gets a new, higher one; ``incarnation`` is random
    per process start."""

    broker_id: int
    incarnation: str
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None


@dataclass(frozen=True)
class FenceBroker:
    """The broker's lease expired (or it shut down): it leads nothing and is not in-sync."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class UnfenceBroker:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class PartitionSpec:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass(frozen=True)
class CreateTopic:
    name: str
    topic_id: str
    partitions: tuple[PartitionSpec, ...]
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionChange:
    """A new leader and/or ISR. Every change bumps ``partition_epoch``; a new leader also
    bumps ``leader_epoch``, which fences the old leader."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True)
class RemoveTopic:
    name: str


@dataclass(frozen=True)
class AddPartitions:
    """New partitions at the end of a topic (Kafka's PartitionRecords of CreatePartitions)."""

    name: str
    partitions: tuple[PartitionSpec, ...]


MetadataRecord = (RegisterBroker | FenceBroker | UnfenceBroker | CreateTopic | PartitionChange
                  | RemoveTopic | AddPartitions)
_TYPES: dict[str, type] = {cls.__name__: cls for cls in (
    RegisterBroker, FenceBroker, UnfenceBroker, CreateTopic, PartitionChange, RemoveTopic,
    AddPartitions)}


def encode(record: MetadataRecord) -> bytes:
    """The record as one Raft entry payload."""
    return json.dumps({"type": type(record).__name__, **asdict(record)},
                      separators=(",", ":"), sort_keys=True).encode()


def decode(data: bytes) -> MetadataRecord:
    """The record in a Raft entry payload; RecordDecodeError if it is not one."""
    try:
        obj = json.loads(data)
        cls = _TYPES[obj.pop("type")]
        return _build(cls, obj)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RecordDecodeError(f"not a metadata record: {data[:80]!r} ({exc})") from None


def _build(cls: type, obj: dict[str, Any]) -> Any:
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in obj:
            continue  # a default
        value = obj[f.name]
        if f.name == "endpoints":
            value = tuple(BrokerEndpoint(**e) for e in value)
        elif f.name == "partitions":
            value = tuple(_build(PartitionSpec, p) for p in value)
        elif isinstance(value, list):
            value = tuple(value)
        values[f.name] = value
    return cls(**values)


def encode_batch(records: list[MetadataRecord]) -> bytes:
    """The records of one decision as one Raft entry payload."""
    return b"[" + b",".join(encode(r) for r in records) + b"]"


def decode_batch(data: bytes) -> list[MetadataRecord]:
    """The records in a Raft entry payload; RecordDecodeError if it is not a batch."""
    try:
        items = json.loads(data)
    except ValueError as exc:
        raise RecordDecodeError(f"not a metadata batch: {data[:80]!r} ({exc})") from None
    if not isinstance(items, list):
        raise RecordDecodeError(f"not a metadata batch: {data[:80]!r}")
    return [decode(json.dumps(item).encode()) for item in items]
