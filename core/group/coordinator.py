"""GroupCoordinator: Kafka's classic group protocol as a thread-safe, callback-driven service."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from core.group.api import (
    CommittedOffset,
    GroupMemberSummary,
    GroupSummary,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommit,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitionKey,
)
from core.group.codes import ErrorCode
from core.group.config import CoordinatorConfig
from core.group.errors import CoordinatorError
from core.group.group import GroupState
from core.group.heartbeat import handle_heartbeat
from core.group.join import handle_join
from core.group.leave import handle_leave
from core.group.member import JoinCallback, SyncCallback
from core.group.offset_manager import OffsetManager
from core.group.outbox import Outbox
from core.group.persistence import GroupWriter
from core.group.rebalance import Context, expire
from core.group.registry import GroupRegistry
from core.group.store import OffsetStore
from core.group.sync import handle_sync

__all__ = ["GroupCoordinator", "now_ms"]

log = logging.getLogger(__name__)


def now_ms() -> int:
    """Wall-clock milliseconds, as Kafka's coordinator uses for deadlines and commit times."""
    return time.time_ns() // 1_000_000


class GroupCoordinator:
    """The coordinator of every classic group of one Ferry node.

    A state machine with no threads of its own, shared by the embedded backend (threads)
    and the broker (asyncio). Lifecycle:

    1. construct, with the OffsetStore that makes commits durable (None: memory only);
    2. ``load()`` replays the store: committed offsets, and each group's last stored
       generation with its members, whose sessions restart. Until then requests answer
       COORDINATOR_LOAD_IN_PROGRESS (a heartbeat NONE and a SyncGroup
       REBALANCE_IN_PROGRESS, as Kafka answers while loading);
    3. requests from any thread, and ``tick()`` about every 100 ms from the driver: it
       expires sessions, ends join phases on their timeouts and expires offsets;
    4. ``close()`` answers every waiting request COORDINATOR_NOT_AVAILABLE, as it does every
       later request. The store belongs to the driver, which closes it.

    Threading: one lock guards all group state. ``join_group`` and ``sync_group`` answer
    through their callback, either before returning or later from whichever thread
    completes the rebalance (another member's request, or ``tick``). Callbacks run after
    the lock is released, so they may call the coordinator; they should be quick (hand the
    response to the waiting thread or event loop).
    """

    def __init__(
        self,
        offset_store: OffsetStore | None = None,
        *,
        clock: Callable[[], int] = now_ms,
        group_initial_rebalance_delay_ms: int = 3000,
        group_min_session_timeout_ms: int = 6000,
        group_max_session_timeout_ms: int = 1800000,
        group_max_size: int = 2**31 - 1,
        offsets_retention_ms: int = 7 * 24 * 3600 * 1000,
        offset_metadata_max_bytes: int = 4096,
        offsets_retention_check_interval_ms: int = 600000,
        partition_exists: Callable[[str, int], bool] | None = None,
    ):
        """``clock`` returns milliseconds. ``partition_exists`` makes commits to unknown
        partitions answer UNKNOWN_TOPIC_OR_PARTITION, as Kafka's broker does; it is called
        without the coordinator's lock. Without it every partition is accepted.
        Raises InvalidCoordinatorConfigError for out-of-range settings."""
        self._config = CoordinatorConfig(
            initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
            min_session_timeout_ms=group_min_session_timeout_ms,
            max_session_timeout_ms=group_max_session_timeout_ms,
            max_size=group_max_size,
            offsets_retention_ms=offsets_retention_ms,
            offsets_retention_check_interval_ms=offsets_retention_check_interval_ms,
            offset_metadata_max_bytes=offset_metadata_max_bytes,
        )
        self._clock = clock
        self._registry = GroupRegistry(loaded=offset_store is None)
        self._offsets = OffsetManager(self._registry, offset_store, self._config, clock,
                                      partition_exists)
        self._writer = GroupWriter(offset_store)
        self._offsets_store = offset_store
        self._next_offsets_check_ms: int | None = None  # guarded by the registry lock

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> None:
        """Replay the store: groups come back with their last stored generation, Stable
        with their members (sessions restarted) or Empty; groups with only committed
        offsets come back Empty. Raises what the store raises if it is unreadable; the
        coordinator then keeps answering COORDINATOR_LOAD_IN_PROGRESS and ``load()`` may
        be retried."""
        self._offsets.load()

    @property
    def offset_store(self) -> OffsetStore | None:
        """The store of offsets and group metadata (its driver owns it)."""
        return self._offsets_store

    def load_partition(self, records: Iterable[tuple[bytes | None, bytes | None]]) -> int:
        """Replace the groups of one ``__consumer_offsets`` partition with its records:
        in a cluster, this broker just became that partition's leader, so it coordinates
        its groups from the replicated log. Returns the number of groups."""
        return self._offsets.load_partition(records)

    def close(self) -> None:
        """Answer every waiting JoinGroup and SyncGroup COORDINATOR_NOT_AVAILABLE and refuse
        everything afterwards. Idempotent."""
        out = Outbox()
        registry = self._registry
        with registry.lock:
            if registry.closed:
                return
            registry.closed = True
            for group in registry.groups.values():
                for member in group.members.values():
                    out.join(member, JoinGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                                       member_id=member.member_id))
                    out.sync(member, SyncGroupResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            registry.groups.clear()
        out.deliver()
        log.info("group coordinator closed")

    def tick(self, now_ms: int | None = None) -> None:
        """Apply every deadline due at ``now_ms`` (default: the clock): expire sessions and
        pending members, end join phases, remove members that never sent SyncGroup; every
        ``offsets_retention_check_interval_ms`` also expire offsets and drop Empty groups
        that have nothing left."""
        out = Outbox()
        registry = self._registry
        with registry.lock:
            if registry.availability_error() != ErrorCode.NONE:
                return
            now = self._clock() if now_ms is None else now_ms
            ctx = Context(self._config, now, out, self._writer)
            for group in list(registry.groups.values()):
                expire(group, ctx)
            interval = self._config.offsets_retention_check_interval_ms
            if self._next_offsets_check_ms is None:
                self._next_offsets_check_ms = now + interval
            check_offsets = now >= self._next_offsets_check_ms
            if check_offsets:
                self._next_offsets_check_ms = now + interval
        out.deliver()
        if check_offsets:
            self._offsets.expire(now)

    # ------------------------------------------------------------------ membership

    def join_group(self, req: JoinGroupRequest, callback: JoinCallback) -> None:
        """JoinGroup; ``callback`` gets the JoinGroupResponse (see the class docstring)."""
        out = Outbox()
        registry = self._registry
        with registry.lock:
            error = registry.status_error(req.group_id, allow_empty_id=False)
            if error == ErrorCode.NONE and not (
                    self._config.min_session_timeout_ms <= req.session_timeout_ms
                    <= self._config.max_session_timeout_ms):
                error = ErrorCode.INVALID_SESSION_TIMEOUT
            if error != ErrorCode.NONE:
                out.add(callback, JoinGroupResponse(error, member_id=req.member_id))
            else:
                handle_join(registry.groups, req, callback, self._context(out))
        out.deliver()

    def sync_group(self, req: SyncGroupRequest, callback: SyncCallback) -> None:
        """SyncGroup; ``callback`` gets the SyncGroupResponse, at once or when the leader's
        assignment arrives."""
        out = Outbox()
        registry = self._registry
        with registry.lock:
            error = registry.status_error(req.group_id, allow_empty_id=False)
            if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                # Kafka's answer while loading: the client rejoins, which waits for the load.
                error = ErrorCode.REBALANCE_IN_PROGRESS
            if error != ErrorCode.NONE:
                out.add(callback, SyncGroupResponse(error))
            else:
                handle_sync(registry.groups, req, callback, self._context(out))
        out.deliver()

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> int:
        """Heartbeat; returns the error code (NONE, REBALANCE_IN_PROGRESS, ...)."""
        registry = self._registry
        with registry.lock:
            error = registry.status_error(group_id, allow_empty_id=False)
            if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                # Kafka answers NONE while loading: clients treat a load error on a heartbeat
                # as fatal, and the member's state is not known yet anyway.
                return ErrorCode.NONE
            if error != ErrorCode.NONE:
                return error
            return handle_heartbeat(registry.groups.get(group_id), generation_id, member_id,
                                    group_instance_id, self._clock())

    def leave_group(self, group_id: str, members: Sequence[tuple[str, str | None]]
                    ) -> tuple[int, list[int]]:
        """LeaveGroup for ``(member_id, group_instance_id)`` pairs; returns the top-level
        error and one error per member, in order."""
        out = Outbox()
        registry = self._registry
        with registry.lock:
            error = registry.status_error(group_id, allow_empty_id=False)
            if error != ErrorCode.NONE:
                return error, []
            result = handle_leave(registry.groups.get(group_id), members, self._context(out))
        out.deliver()
        return result

    # ------------------------------------------------------------------ offsets

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str,
                       group_instance_id: str | None,
                       offsets: Mapping[TopicPartitionKey, OffsetCommit]
                       ) -> dict[TopicPartitionKey, int]:
        """OffsetCommit; an error code per partition, keyed as given. NONE means the commit
        is in the store. ``generation_id=-1`` with ``member_id=""`` is a "simple" commit,
        accepted only while the group has no members (UNKNOWN_MEMBER_ID otherwise)."""
        return self._offsets.commit(group_id, generation_id, member_id, group_instance_id,
                                    offsets)

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartitionKey] | None
                      ) -> dict[TopicPartitionKey, CommittedOffset]:
        """Committed offsets of ``partitions`` (all when None); partitions without a commit
        are absent. Raises CoordinatorError while loading or after close."""
        return self._offsets.fetch(group_id, partitions)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """DeleteGroups: NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND for an
        unknown one; a deleted group's committed offsets are deleted too."""
        return self._offsets.delete_groups(group_ids)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartitionKey]
                       ) -> tuple[int, dict[TopicPartitionKey, int]]:
        """OffsetDelete: the group-level error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP for a
        non-consumer group with members) and one error per partition, keyed as given:
        GROUP_SUBSCRIBED_TO_TOPIC for topics a consumer group with members consumes,
        UNKNOWN_TOPIC_OR_PARTITION, or NONE once the offset is deleted (or had none)."""
        return self._offsets.delete_offsets(group_id, partitions)

    # ------------------------------------------------------------------ inspection

    def list_groups(self) -> list[tuple[str, str, str]]:
        """``(group_id, protocol_type, state)`` of every group, sorted by id; a group with
        only committed offsets is Empty. Raises CoordinatorError while loading or after
        close."""
        registry = self._registry
        with registry.lock:
            error = registry.availability_error()
            if error != ErrorCode.NONE:
                raise CoordinatorError(f"cannot list groups now ({ErrorCode(error).name}); "
                                       "retry", error_code=error)
            return sorted((g.group_id, g.protocol_type or "", str(g.state))
                          for g in registry.groups.values())

    def describe_group(self, group_id: str) -> GroupSummary:
        """DescribeGroups for one group. The protocol name, metadata and assignments are
        shown only while Stable; an unknown group is Dead, as Kafka reports it."""
        registry = self._registry
        with registry.lock:
            error = registry.status_error(group_id, allow_empty_id=True)
            group = registry.groups.get(group_id)
            if error != ErrorCode.NONE or group is None:
                return GroupSummary(group_id, str(GroupState.DEAD), "", "", -1, [], error)
            stable = group.state is GroupState.STABLE
            protocol = (group.protocol_name or "") if stable else ""
            members = [GroupMemberSummary(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.metadata(protocol) if stable else b"", m.assignment if stable else b"")
                for m in group.members.values()]
            return GroupSummary(group_id, str(group.state), group.protocol_type or "",
                                protocol, group.generation_id, members)

    def _context(self, out: Outbox) -> Context:
        return Context(self._config, self._clock(), out, self._writer)
