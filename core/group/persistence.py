"""Group metadata in ``__consumer_offsets``: written per generation, restored on load.

Kafka's coordinator stores a group's generation, protocol, leader and members (with their
subscriptions and assignments) when the leader's assignment arrives, when a rebalance
leaves the group Empty, and when a static member is replaced without a rebalance; it
writes a tombstone when the group is deleted. On load it restores the group Stable (or
Empty) and restarts every member's session timer, so that consumers keep their member
ids and generation across a coordinator restart instead of failing their next commit
with UNKNOWN_MEMBER_ID. Ferry does the same, in the same record formats.
"""

from __future__ import annotations

import logging

from core.group.codes import ErrorCode
from core.group.errors import OffsetsFormatError, OffsetStoreError
from core.group.group import Group, GroupState
from core.group.member import Member
from core.group.metadata_format import (
    GroupMetadataValue,
    MemberMetadata,
    encode_group_metadata_value,
)
from core.group.offsets_format import encode_group_metadata_key
from core.group.store import OffsetStore

__all__ = ["GroupWriter", "group_tombstone", "metadata_value", "restore_group"]

log = logging.getLogger(__name__)


def metadata_value(group: Group) -> GroupMetadataValue:
    """The GroupMetadataValue of ``group`` as it stands: each member's subscription is its
    metadata for the group's protocol."""
    protocol = group.protocol_name
    members = tuple(
        MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                       m.rebalance_timeout_ms, m.session_timeout_ms,
                       _subscription(m, protocol), m.assignment)
        for m in group.members.values())
    return GroupMetadataValue(group.protocol_type or "", group.generation_id, protocol,
                              group.leader_id, group.state_timestamp_ms, members)


def _subscription(member: Member, protocol: str | None) -> bytes:
    """The member's metadata for the group's protocol; every member of a generation
    supports it, but a record must never fail on one that does not."""
    if protocol is None or protocol not in member.protocol_names:
        return b""
    return member.metadata(protocol)


def group_tombstone(group_id: str) -> tuple[bytes, bytes | None]:
    """The record deleting a group's metadata."""
    return encode_group_metadata_key(group_id), None


def restore_group(group_id: str, value: GroupMetadataValue, now_ms: int) -> Group:
    """A group as Kafka's loadGroup rebuilds it: Stable with its members, or Empty; every
    member's session restarts at ``now_ms`` (members that are gone expire after it)."""
    group = Group(group_id, now_ms)
    group.protocol_type = value.protocol_type or None
    group.generation_id = value.generation
    if value.current_state_timestamp >= 0:
        group.state_timestamp_ms = value.current_state_timestamp
    if value.members and value.protocol is not None:
        group.protocol_name = value.protocol
        for stored in value.members:
            member = Member(stored.member_id, stored.group_instance_id, stored.client_id,
                            stored.client_host, stored.rebalance_timeout,
                            stored.session_timeout, value.protocol_type,
                            [(value.protocol, stored.subscription)],
                            assignment=stored.assignment)
            member.touch(now_ms)
            group.add(member)
        if value.leader in group.members:
            group.leader_id = value.leader
        group.state = GroupState.STABLE
    group.update_subscribed_topics()
    return group


class GroupWriter:
    """Appends group metadata records through the OffsetStore.

    Called with the coordinator's lock held, so that a group's records reach the log in
    the order its state changed (a deletion's tombstone is written under the same lock).
    """

    def __init__(self, store: OffsetStore | None):
        self._store = store

    def store(self, group: Group) -> int:
        """Write ``group``'s current metadata; returns the error code for the requests
        waiting on it (NONE once the record is in the log)."""
        if self._store is None:
            return ErrorCode.NONE
        try:
            key = encode_group_metadata_key(group.group_id)
            self._store.append(group.group_id,
                               [(key, encode_group_metadata_value(metadata_value(group)))])
        except OffsetsFormatError as exc:
            log.error("group %s: metadata cannot be encoded: %s", group.group_id, exc)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        except OffsetStoreError as exc:
            log.warning("group %s: storing generation %d failed: %s", group.group_id,
                        group.generation_id, exc)
            # Kafka answers a too-large group record UNKNOWN_SERVER_ERROR; other storage
            # failures are retriable.
            if exc.error_code == ErrorCode.INVALID_COMMIT_OFFSET_SIZE:
                return ErrorCode.UNKNOWN_SERVER_ERROR
            return exc.error_code
        return ErrorCode.NONE
