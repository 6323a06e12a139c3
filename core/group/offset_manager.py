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
    replay,
    tombstones,
    validate_commit,
)
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
        """Replay the store into the registry once; returns the number of groups loaded."""
        registry = self._registry
        with registry.store_lock:
            if registry.loaded:
                return 0  # idempotent: the cache already holds everything stored
            loaded = replay(self._store.load()) if self._store is not None else {}
            with registry.lock:
                now = self._clock()
                for group_id, offsets in loaded.items():
                    group = registry.groups.setdefault(group_id, Group(group_id, now))
                    group.offsets.update(offsets)
                registry.loaded = True
        return len(loaded)

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
        """DeleteGroups: Empty groups only; their offsets are deleted with tombstones."""
        registry = self._registry
        results: dict[str, int] = {}
        deleted: dict[str, list[TopicPartitionKey]] = {}
        with registry.store_lock:
            with registry.lock:
                now = self._clock()
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
                        group.transition(GroupState.DEAD, now)
                        del registry.groups[group_id]
                        deleted[group_id] = list(group.offsets)
                        results[group_id] = ErrorCode.NONE
                        log.info("deleted group %s with %d committed offsets", group_id,
                                 len(group.offsets))
            for group_id, partitions in deleted.items():
                results[group_id] = self._append_tombstones(group_id, partitions)
        return results

    def expire(self, now: int) -> None:
        """Expire offsets past retention and drop Empty groups with nothing left."""
        registry = self._registry
        retention = self._config.offsets_retention_ms
        expired: dict[str, list[TopicPartitionKey]] = {}
        with registry.store_lock:
            with registry.lock:
                if registry.closed:
                    return
                for group_id, group in list(registry.groups.items()):
                    partitions = expired_offsets(group, now, retention)
                    for tp in partitions:
                        del group.offsets[tp]
                    if partitions:
                        expired[group_id] = partitions
                    if group.state is GroupState.EMPTY and group.is_unused:
                        group.transition(GroupState.DEAD, now)
                        del registry.groups[group_id]
            for group_id, partitions in expired.items():
                log.info("expired %d committed offsets of group %s", len(partitions), group_id)
                self._append_tombstones(group_id, partitions)

    def _append_tombstones(self, group_id: str, partitions: list[TopicPartitionKey]) -> int:
        if self._store is None or not partitions:
            return ErrorCode.NONE
        try:
            self._store.append(group_id, tombstones(group_id, partitions))
        except OffsetStoreError as exc:
            log.error("deleting offsets of group %s failed; they may reappear after a "
                      "restart: %s", group_id, exc)
            return exc.error_code
        except OffsetsFormatError as exc:
            log.error("offsets of group %s cannot be deleted: %s", group_id, exc)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.NONE
