"""Committed offsets: commit validation, retention, and the records written and replayed."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from core.group.api import CommittedOffset, TopicPartitionKey
from core.group.codes import ErrorCode
from core.group.errors import OffsetsFormatError
from core.group.group import Group, GroupState
from core.group.metadata_format import GroupMetadataValue, decode_group_metadata_value
from core.group.offsets_format import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

__all__ = [
    "commit_records",
    "expired_offsets",
    "metadata_too_large",
    "replay",
    "replay_all",
    "tombstones",
    "validate_commit",
]

log = logging.getLogger(__name__)


def validate_commit(group: Group, generation_id: int, member_id: str,
                    group_instance_id: str | None) -> int:
    """Kafka's validateOffsetCommit plus its per-state rule, as an error code.

    A commit that names a member or generation must come from a current member of the
    current generation. One that names neither (generation -1, member "") is a "simple"
    commit from a consumer that assigns partitions itself, allowed only while the group has
    no members.
    """
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation_id >= 0 or member_id != "" or group_instance_id is not None:
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        elif member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
    elif group.state is not GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if group.state is GroupState.COMPLETING_REBALANCE:
        # The member got this generation's JoinGroup answer but not its assignment yet;
        # it must finish the rebalance before committing.
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def metadata_too_large(metadata: str, max_bytes: int) -> bool:
    """offset.metadata.max.bytes, measured as Kafka measures it: in Java chars (UTF-16 code
    units), despite the name."""
    return len(metadata.encode("utf-16-le", "surrogatepass")) // 2 > max_bytes


def commit_records(group_id: str, offsets: Mapping[TopicPartitionKey, CommittedOffset]
                   ) -> list[tuple[bytes, bytes | None]]:
    """The ``__consumer_offsets`` records of a commit. Raises OffsetsFormatError if a name
    is too long for the format."""
    return [(encode_offset_commit_key(group_id, topic, partition),
             encode_offset_commit_value(OffsetCommitValue(
                 c.offset, c.leader_epoch, c.metadata, c.commit_timestamp)))
            for (topic, partition), c in offsets.items()]


def tombstones(group_id: str, partitions: Iterable[TopicPartitionKey]
               ) -> list[tuple[bytes, bytes | None]]:
    """Records deleting the committed offsets of ``partitions``."""
    return [(encode_offset_commit_key(group_id, topic, partition), None)
            for topic, partition in partitions]


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[TopicPartitionKey]:
    """Offsets past ``offsets.retention.ms`` (KIP-211): in an Empty group counted from when
    it became Empty; in a group that never had members ("simple" commits only) from each
    commit. Offsets of groups with members never expire here; Kafka also expires those of
    Stable consumer groups for topics no longer subscribed, which needs the consumer
    protocol and is left out."""
    if group.state is GroupState.EMPTY and group.protocol_type is not None:
        def base(_: CommittedOffset) -> int:
            return group.state_timestamp_ms
    elif group.protocol_type is None:
        def base(offset: CommittedOffset) -> int:
            return offset.commit_timestamp
    else:
        return []
    expired = []
    for partition, offset in group.offsets.items():
        if offset.expire_timestamp is not None:
            # Written by an old client with an explicit retention: Kafka honours it.
            if now_ms >= offset.expire_timestamp:
                expired.append(partition)
        elif now_ms - base(offset) >= retention_ms:
            expired.append(partition)
    return expired


def replay(records: Iterable[tuple[bytes | None, bytes | None]]
           ) -> dict[str, dict[TopicPartitionKey, CommittedOffset]]:
    """The committed offsets of ``replay_all``."""
    return replay_all(records)[0]


def replay_all(records: Iterable[tuple[bytes | None, bytes | None]]
               ) -> tuple[dict[str, dict[TopicPartitionKey, CommittedOffset]],
                          dict[str, GroupMetadataValue]]:
    """Committed offsets and group metadata per group from stored records in log order:
    the last value of a key wins and a tombstone deletes it. Unknown record types are
    skipped, as are records that cannot be decoded (logged: one bad record must not make
    every group unavailable)."""
    result: dict[str, dict[TopicPartitionKey, CommittedOffset]] = {}
    groups: dict[str, GroupMetadataValue] = {}
    skipped = 0
    for key_bytes, value_bytes in records:
        if key_bytes is None:
            skipped += 1
            continue
        try:
            key = decode_key(key_bytes)
            if isinstance(key, GroupMetadataKey):
                if value_bytes is None:
                    groups.pop(key.group, None)
                else:
                    groups[key.group] = decode_group_metadata_value(value_bytes)
                continue
            if not isinstance(key, OffsetCommitKey):
                continue
            offsets = result.setdefault(key.group, {})
            partition = (key.topic, key.partition)
            if value_bytes is None:
                offsets.pop(partition, None)
                continue
            value = decode_offset_commit_value(value_bytes)
        except OffsetsFormatError as exc:
            skipped += 1
            log.warning("skipping an unreadable __consumer_offsets record: %s", exc)
            continue
        offsets[partition] = CommittedOffset(value.offset, value.leader_epoch, value.metadata,
                                             value.commit_timestamp, value.expire_timestamp)
    if skipped:
        log.warning("skipped %d unreadable __consumer_offsets records", skipped)
    return {group: offsets for group, offsets in result.items() if offsets}, groups
