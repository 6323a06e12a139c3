"""The metadata records the quorum replicates, after KRaft's (``RegisterBrokerRecord``,
``FenceBrokerRecord``, ``TopicRecord`` + ``PartitionRecord``, ``PartitionChangeRecord``,
``RemoveTopicRecord``). Each is one Raft entry, encoded as a JSON object with a ``type``;
the metadata log is small, so readability wins over size. The records of one controller
decision (a fencing and the leader changes it causes) travel as one entry, a JSON array,
so no node ever applies half of a decision.

The cluster's security metadata travels the same way (KRaft's ``AccessControlEntryRecord``
and ``RemoveAccessControlEntryRecord``, ``UserScramCredentialRecord`` and
``RemoveUserScramCredentialRecord``, ``ClientQuotaRecord``), so every broker authorizes,
authenticates and throttles from the same committed log. Byte fields (SCRAM salts and
keys) are base64 in the JSON; no record ever holds a password or a salted password.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "NO_LEADER",
    "AccessControlEntry",
    "AddPartitions",
    "BrokerEndpoint",
    "ClientQuota",
    "CreateTopic",
    "FenceBroker",
    "MetadataRecord",
    "PartitionChange",
    "PartitionSpec",
    "RecordDecodeError",
    "RegisterBroker",
    "RemoveAccessControlEntry",
    "RemoveTopic",
    "RemoveUserScramCredential",
    "UnfenceBroker",
    "UserScramCredential",
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


@dataclass(frozen=True)
class AccessControlEntry:
    """One ACL binding under the id the controller gave it (Kafka's
    AccessControlEntryRecord); the enums are Kafka's wire codes (``core.broker.security.acl``)."""

    id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class RemoveAccessControlEntry:
    id: str


@dataclass(frozen=True)
class UserScramCredential:
    """A user's credential for one mechanism (``SCRAM-SHA-256``/``-512``), set or replaced:
    what the SCRAM server needs, never the password nor the salted password."""

    name: str
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True)
class RemoveUserScramCredential:
    name: str
    mechanism: str


@dataclass(frozen=True)
class ClientQuota:
    """Set (or with ``remove``, remove) one quota key of an entity: sorted (entity type,
    name) pairs, name None for the default entity, as ``core.broker.security.store``."""

    entity: tuple[tuple[str, str | None], ...]
    key: str
    value: float
    remove: bool = False


MetadataRecord = (RegisterBroker | FenceBroker | UnfenceBroker | CreateTopic | PartitionChange
                  | RemoveTopic | AddPartitions | AccessControlEntry | RemoveAccessControlEntry
                  | UserScramCredential | RemoveUserScramCredential | ClientQuota)
_TYPES: dict[str, type] = {cls.__name__: cls for cls in (
    RegisterBroker, FenceBroker, UnfenceBroker, CreateTopic, PartitionChange, RemoveTopic,
    AddPartitions, AccessControlEntry, RemoveAccessControlEntry, UserScramCredential,
    RemoveUserScramCredential, ClientQuota)}


def _bytes_as_text(value: object) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not a metadata record field type")


def encode(record: MetadataRecord) -> bytes:
    """The record as one Raft entry payload."""
    return json.dumps({"type": type(record).__name__, **asdict(record)},
                      separators=(",", ":"), sort_keys=True, default=_bytes_as_text).encode()


def decode(data: bytes) -> MetadataRecord:
    """The record in a Raft entry payload; RecordDecodeError if it is not one."""
    try:
        obj = json.loads(data)
        cls = _TYPES[obj.pop("type")]
        return _build(cls, obj)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # binascii.Error too
        raise RecordDecodeError(f"not a metadata record: {data[:80]!r} ({exc})") from None


def _build(cls: type, obj: dict[str, Any]) -> Any:
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in obj:
            continue  # a default
        value = obj[f.name]
        if f.name == "endpoints":
            value = tuple(BrokerEndpoint(**e) for e in value)
        elif f.type == "bytes":
            value = base64.b64decode(value, validate=True)
        elif f.name == "entity":
            value = tuple((str(t), None if n is None else str(n)) for t, n in value)
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
