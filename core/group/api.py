"""Requests and results of the group coordinator, shaped after Kafka's group RPCs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "CommittedOffset",
    "GroupMemberSummary",
    "GroupSummary",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "OffsetCommit",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicPartitionKey",
]

#: ``(topic, partition)``. Any tuple of that shape works, including
#: ``core.backends.types.TopicPartition``; results are keyed by the caller's objects.
TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    """A JoinGroup request (Kafka's v4+ semantics when ``require_known_member_id``).

    ``protocols`` are ``(name, metadata)`` in the member's order of preference; metadata is
    opaque to the coordinator. ``member_id=""`` means a new member.
    """

    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True


class JoinGroupMember(NamedTuple):
    """One member as the leader sees it: its id and its metadata for the chosen protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    """The outcome of a JoinGroup. ``members`` is filled only in the leader's response."""

    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    member_id: str = ""
    members: list[JoinGroupMember] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    """A SyncGroup request; only the leader passes ``assignments`` (member id -> bytes).

    ``protocol_type`` / ``protocol_name`` (SyncGroup v5+) are checked against the group's
    when given.
    """

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    """The outcome of a SyncGroup: this member's assignment (``b""`` if the leader gave none)."""

    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One partition of an OffsetCommit. ``commit_timestamp=-1`` means the coordinator's now."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """A committed offset as stored. ``expire_timestamp`` is only set by records of the old
    value version 1, which carried a per-offset expiry (Kafka honours it on load)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class GroupMemberSummary:
    """A member as DescribeGroups shows it; metadata and assignment only while Stable."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """A group as DescribeGroups shows it. An unknown group is ``Dead`` with no members.

    ``protocol_name`` is only reported while Stable, as Kafka does.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    generation_id: int
    members: list[GroupMemberSummary] = field(default_factory=list)
    error_code: int = 0
