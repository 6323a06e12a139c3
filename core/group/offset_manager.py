"""Committed offsets of every group: commit, fetch, delete, expire, and load from the store."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from core.group.api import CommittedOffset, OffsetCommit, TopicPartitionKey
from core.group.codes import ErrorCode
from core.group.config import CoordinatorConfig
from core.group.errors import CoordinatorError, OffsetsFormatError, OffsetStoreError
from core.group.group import Group, GroupState
from core.group.offsets import (
    commit_records,
    expired_offsets,
    metadata_too_large,
    replay_all,
    tombstones,
    validate_commit,
)
from core.group.persistence import group_tombstone, restore_group
from core.group.registry import GroupRegistry
from core.group.store import OffsetStore

__all__ = ["OffsetManager"]

log = logging.getLogger(__name__)


class OffsetManager:
    """The offset half of the GroupCoordinator; it shares the coordinator's registry.

    Offsets are cached on each Group and written through the OffsetStore before a commit
    answers NONE. Commits, deletions and expiry hold ``registry.store_lock`` across their
    append, so that records reach the log in the order the cache changed.
    """

    def __init__(self, registry: GroupRegistry, store: OffsetStore | None,
                 config: CoordinatorConfig, clock: Callable[[], int],
                 partition_exists: Callable[[str, int], bool] | None):
        self._registry = registry
        self._store = store
        self._config = config
        self._clock = clock
        self._partition_exists = partition_exists

    def load(self) -> int:
        """Replay the store into the registry once: committed offsets, and groups with
        their last stored generation and members (whose sessions restart now). Returns
        the number of groups loaded."""
        registry = self._registry
        with registry.store_lock:
            if registry.loaded:
                return 0  # idempotent: the cache already holds everything stored
            offsets, metadata = replay_all(self._store.load()) if self._store is not None \
                else ({}, {})
            with registry.lock:
                now = self._clock()
                for group_id, value in metadata.items():
                    registry.groups[group_id] = restore_group(group_id, value, now)
                for group_id, committed in offsets.items():
                    group = registry.groups.setdefault(group_id, Group(group_id, now))
                    group.offsets.update(committed)
                registry.loaded = True
                loaded = len(registry.groups)
                members = sum(len(g.members) for g in registry.groups.values())
        log.info("group coordinator loaded %d groups (%d with stored generations, %d "
                 "members)", loaded, len(metadata), members)
        return loaded

    def load_partition(self, records: Iterable[tuple[bytes | None, bytes | None]]) -> int:
        """This broker now leads one ``__consumer_offsets`` partition (a cluster): its
        groups are replaced by what that partition's replicated log says. Returns the
        number of groups loaded."""
        registry = self._registry
        with registry.store_lock:
            offsets, metadata = replay_all(records)
            with registry.lock:
                now = self._clock()
                for group_id in set(metadata) | set(offsets):
                    group = (restore_group(group_id, metadata[group_id], now)
                             if group_id in metadata else Group(group_id, now))
                    group.offsets.update(offsets.get(group_id, {}))
                    registry.groups[group_id] = group
        return len(set(metadata) | set(offsets))

    def commit(self, group_id: str, generation_id: int, member_id: str,
               group_instance_id: str | None, offsets: Mapping[TopicPartitionKey, OffsetCommit]
               ) -> dict[TopicPartitionKey, int]:
        """OffsetCommit: an error code per partition, keyed and ordered as given."""
        results: dict[TopicPartitionKey, int] = {}
        if self._partition_exists is not None:
            # Outside the lock: this calls into the log layer.
            for tp in offsets:
                if not self._partition_exists(tp[0], tp[1]):
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        wanted = {tp: c for tp, c in offsets.items() if tp not in results}
        if wanted:
            results.update(self._commit(group_id, generation_id, member_id,
                                        group_instance_id, wanted))
        return {tp: results[tp] for tp in offsets}

    def _commit(self, group_id: str, generation_id: int, member_id: str,
                group_instance_id: str | None, offsets: Mapping[TopicPartitionKey, OffsetCommit]
                ) -> dict[TopicPartitionKey, int]:
        registry = self._registry
        with registry.store_lock:
            with registry.lock:
                now = self._clock()
                group, error = self._commit_target(group_id, generation_id, member_id,
                                                   group_instance_id, now)
                if group is None:
                    return dict.fromkeys(offsets, error)
                results, accepted = self._accept(offsets, now)
                if not accepted:
                    if group.is_unused:
                        del registry.groups[group_id]
                    return results
            error = self._append_commit(group_id, accepted)
            with registry.lock:
                if error == ErrorCode.NONE:
                    group.offsets.update(accepted)
                elif group.is_unused and registry.groups.get(group_id) is group:
                    del registry.groups[group_id]
        if error != ErrorCode.NONE:
            for tp in accepted:
                results[tp] = error
        return results

    def _commit_target(self, group_id: str, generation_id: int, member_id: str,
                       group_instance_id: str | None, now: int) -> tuple[Group | None, int]:
        """The group a commit goes to, or None and the error (caller holds the lock)."""
        groups = self._registry.groups
        error = self._registry.status_error(group_id, allow_empty_id=True)
        if error != ErrorCode.NONE:
            return None, error
        group = groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # A member of a generation this coordinator does not know.
                return None, ErrorCode.ILLEGAL_GENERATION
            group = groups[group_id] = Group(group_id, now)
        error = validate_commit(group, generation_id, member_id, group_instance_id)
        if error != ErrorCode.NONE:
            if group.is_unused:
                del groups[group_id]
            return None, error
        member = group.members.get(member_id)
        if member is not None and not member.is_new:
            member.touch(now)  # a commit is as good as a heartbeat
        return group, ErrorCode.NONE

    def _accept(self, offsets: Mapping[TopicPartitionKey, OffsetCommit], now: int
                ) -> tuple[dict[TopicPartitionKey, int], dict[TopicPartitionKey, CommittedOffset]]:
        results: dict[TopicPartitionKey, int] = {}
        accepted: dict[TopicPartitionKey, CommittedOffset] = {}
        for tp, commit in offsets.items():
            metadata = commit.metadata or ""
            if metadata_too_large(metadata, self._config.offset_metadata_max_bytes):
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            timestamp = now if commit.commit_timestamp < 0 else commit.commit_timestamp
            accepted[(tp[0], tp[1])] = CommittedOffset(
                commit.offset, commit.leader_epoch, metadata, timestamp)
            results[tp] = ErrorCode.NONE
        return results, accepted

    def _append_commit(self, group_id: str,
                       offsets: Mapping[TopicPartitionKey, CommittedOffset]) -> int:
        if self._store is None:
            return ErrorCode.NONE
        try:
            self._store.append(group_id, commit_records(group_id, offsets))
        except OffsetsFormatError as exc:
            log.warning("offset commit of group %s cannot be encoded: %s", group_id, exc)
            return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        except OffsetStoreError as exc:
            log.warning("offset commit of group %s failed: %s", group_id, exc)
            return exc.error_code
        return ErrorCode.NONE

    def fetch(self, group_id: str, partitions: Iterable[TopicPartitionKey] | None
              ) -> dict[TopicPartitionKey, CommittedOffset]:
        """OffsetFetch: committed offsets, only of partitions that have one."""
        registry = self._registry
        with registry.lock:
            error = registry.status_error(group_id, allow_empty_id=True)
            if error != ErrorCode.NONE:
                raise CoordinatorError(
                    f"cannot fetch offsets of group {group_id!r} now "
                    f"({ErrorCode(error).name}); retry", error_code=error)
            group = registry.groups.get(group_id)
            if group is None:
                return {}
            if partitions is None:
                return dict(group.offsets)
            return {tp: group.offsets[(tp[0], tp[1])] for tp in partitions
                    if (tp[0], tp[1]) in group.offsets}

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """DeleteGroups: Empty groups only. A group is deleted once the tombstones of its
        metadata and offsets are in the store; if they cannot be written it stays, and
        the error is its result."""
        registry = self._registry
        results: dict[str, int] = {}
        with registry.store_lock, registry.lock:
            for group_id in group_ids:
                error = registry.status_error(group_id, allow_empty_id=True)
                group = registry.groups.get(group_id)
                if error != ErrorCode.NONE:
                    results[group_id] = error
                elif group is None:
                    results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                elif group.state is not GroupState.EMPTY:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    results[group_id] = self._remove(group, list(group.offsets),
                                                     drop_group=True)
                    if results[group_id] == ErrorCode.NONE:
                        log.info("deleted group %s", group_id)
        return results

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartitionKey]
                       ) -> tuple[int, dict[TopicPartitionKey, int]]:
        """OffsetDelete, as Kafka's handleDeleteOffsets: the group-level error, and an
        error per partition (keyed as given). An Empty group loses the offsets of every
        partition named; a consumer group with members keeps those of topics its current
        generation subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); any other group with members
        answers NON_EMPTY_GROUP. An Empty group left with no offsets is deleted."""
        wanted = list(partitions)
        results: dict[TopicPartitionKey, int] = {}
        if self._partition_exists is not None:
            for tp in wanted:  # outside the lock: this calls into the log layer
                if not self._partition_exists(tp[0], tp[1]):
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        registry = self._registry
        with registry.store_lock, registry.lock:
            error = registry.status_error(group_id, allow_empty_id=True)
            group = registry.groups.get(group_id)
            if error != ErrorCode.NONE:
                return error, {}
            if group is None or group.state is GroupState.DEAD:
                return ErrorCode.GROUP_ID_NOT_FOUND, {}
            if group.state is not GroupState.EMPTY and group.protocol_type != "consumer":
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed: frozenset[str] = frozenset()
            if group.state is not GroupState.EMPTY:
                # Unknown subscriptions protect nothing, as in Kafka.
                subscribed = group.subscribed_topics or frozenset()
            eligible = []
            for tp in wanted:
                if tp in results:
                    continue
                if tp[0] in subscribed:
                    results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
            present = [(tp[0], tp[1]) for tp in eligible if (tp[0], tp[1]) in group.offsets]
            error = self._remove(group, present, drop_group=False)
            for tp in eligible:
                results[tp] = error
            if present and error == ErrorCode.NONE:
                log.info("deleted %d committed offsets of group %s", len(present), group_id)
        return ErrorCode.NONE, {tp: results[tp] for tp in wanted}

    def expire(self, now: int) -> None:
        """Expire offsets past retention and drop Empty groups with nothing left. What
        cannot be written to the store stays, to be retried at the next check."""
        registry = self._registry
        retention = self._config.offsets_retention_ms
        with registry.store_lock, registry.lock:
            if registry.closed:
                return
            for group in list(registry.groups.values()):
                partitions = expired_offsets(group, now, retention)
                if not (partitions or (group.state is GroupState.EMPTY and group.is_unused)):
                    continue
                error = self._remove(group, partitions, drop_group=False)
                if error == ErrorCode.NONE and partitions:
                    log.info("expired %d committed offsets of group %s", len(partitions),
                             group.group_id)

    def _remove(self, group: Group, partitions: list[TopicPartitionKey], *,
                drop_group: bool) -> int:
        """Delete ``partitions``' offsets of ``group``, and the group itself when
        ``drop_group`` or when it is left Empty with nothing: first in the store, then in
        the cache, so that a failed write changes nothing. The caller holds both locks, so
        the tombstones reach the log in order with the group's metadata records."""
        gone = set(partitions)
        drop = drop_group or (group.state is GroupState.EMPTY and not group.members
                              and not group.pending_members
                              and all(tp in gone for tp in group.offsets))
        try:
            records = tombstones(group.group_id, partitions)
        except OffsetsFormatError as exc:
            log.error("offsets of group %s cannot be deleted: %s", group.group_id, exc)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if drop:
            records.append(group_tombstone(group.group_id))
        error = self._append_tombstones(group.group_id, records)
        if error != ErrorCode.NONE:
            return error
        for tp in partitions:
            group.offsets.pop(tp, None)
        if drop:
            group.transition(GroupState.DEAD, self._clock())
            del self._registry.groups[group.group_id]
        return ErrorCode.NONE

    def _append_tombstones(self, group_id: str, records: list[tuple[bytes, bytes | None]]
                           ) -> int:
        if self._store is None or not records:
            return ErrorCode.NONE
        try:
            self._store.append(group_id, records)
        except OffsetStoreError as exc:
            log.error("deleting offsets of group %s failed; they stay: %s", group_id, exc)
            return exc.error_code
        return ErrorCode.NONE
