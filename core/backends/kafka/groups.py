"""Classic group membership over the Kafka protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

librdkafka's consumer runs its own membership with the ``consumer`` protocol type only, so
these requests are built with ``kafka.protocol`` and sent to the group's coordinator (from
FindCoordinator). A JoinGroup or a follower's SyncGroup may block for up to the rebalance
timeout: it holds its own pooled connection for that long (other calls take other
connections) and its response timeout is the rebalance timeout plus ``request.timeout.ms``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

from core.backends import errors as be
from core.backends.kafka.client import KafkaClient
from core.backends.kafka.codes import COORDINATOR_MOVED, kafka_error
from core.backends.kafka.retry import Deadline, RetryableProblem
from core.backends.types import GroupMember, JoinResult
from core.protocol.errors import ErrorCode as E

__all__ = ["GroupMembership", "on_coordinator"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Kafka's default rebalance timeout (max.poll.interval.ms), for a SyncGroup whose join this
#: backend did not see.
_DEFAULT_REBALANCE_TIMEOUT_MS = 300000
_MAX_REMEMBERED_MEMBERS = 10000
_JOIN_ROUNDS = 3  # a MEMBER_ID_REQUIRED answer, then the real join (once more if it moved)


def on_coordinator(client: KafkaClient, group_id: str, what: str,
                   call: Callable[[int], T], deadline: Deadline) -> T:
    """Run ``call(coordinator_node)`` with retries; ``call`` raises ``RetryableProblem`` with
    ``coordinator_of`` when the group moved, and the coordinator is looked up again."""

    def attempt() -> T:
        return call(client.coordinator(group_id, deadline))

    return client.retrying(what, attempt, deadline)


def check_group_code(code: int, group_id: str, what: str, message: str | None = None) -> None:
    """Raise for a group-level error code; coordinator moves are retried by the caller."""
    if code == E.NONE:
        return
    error = kafka_error(code, what, message)
    if code in COORDINATOR_MOVED:
        raise RetryableProblem(error, coordinator_of=group_id)
    raise error


class GroupMembership:
    """The membership half of the LogBackend group methods for ``KafkaBackend``."""

    def __init__(self, client: KafkaClient) -> None:
        self._client = client
        # The rebalance timeout of each member's last join, which bounds how long its
        # SyncGroup may wait for the leader's assignment.
        self._rebalance_timeouts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def join_group(self, group_id: str, *, member_id: str, protocol_type: str,
                   protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int,
                   rebalance_timeout_ms: int, group_instance_id: str | None,
                   client_id: str) -> JoinResult:
        client = self._client
        client.check_open()
        what = f"join of group {group_id!r}"
        deadline = client.api_deadline(rebalance_timeout_ms)
        for _ in range(_JOIN_ROUNDS):
            response = on_coordinator(
                client, group_id, what,
                lambda node, member=member_id: self._join_once(
                    node, group_id, member, protocol_type, protocols, session_timeout_ms,
                    rebalance_timeout_ms, group_instance_id, client_id, deadline),
                deadline)
            if response.error_code == E.MEMBER_ID_REQUIRED:
                # KIP-394: the coordinator assigned an id; the real join uses it.
                member_id = response.member_id
                continue
            check_group_code(response.error_code, group_id, what)
            with self._lock:
                if len(self._rebalance_timeouts) >= _MAX_REMEMBERED_MEMBERS:
                    self._rebalance_timeouts.clear()  # members that never left; re-learnt
                self._rebalance_timeouts[(group_id, response.member_id)] = rebalance_timeout_ms
            return JoinResult(
                generation_id=response.generation_id,
                protocol_type=response.protocol_type or protocol_type,
                protocol_name=response.protocol_name or "",
                leader_id=response.leader,
                member_id=response.member_id,
                members=tuple(GroupMember(m.member_id, m.group_instance_id, bytes(m.metadata))
                              for m in response.members),
            )
        raise be.GroupError(f"{what} kept asking for a member id")

    def _join_once(self, node: int, group_id: str, member_id: str, protocol_type: str,
                   protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int,
                   rebalance_timeout_ms: int, group_instance_id: str | None, client_id: str,
                   deadline: Deadline) -> Any:
        def build(version: int) -> Any:
            if group_instance_id is not None and version < 5:
                raise be.GroupError("static membership (group.instance.id) needs JoinGroup v5+, "
                                    "which the coordinator does not support")
            return JoinGroupRequest(
                group_id=group_id, session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id,
                group_instance_id=group_instance_id, protocol_type=protocol_type,
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=name,
                                                                      metadata=bytes(meta))
                           for name, meta in protocols])

        response = self._client.send_to_node(
            node, JoinGroupRequest, build, versions=(2, 7), deadline=deadline,
            extra_timeout_ms=rebalance_timeout_ms, client_id=client_id)
        if response.error_code in COORDINATOR_MOVED:
            check_group_code(response.error_code, group_id, f"join of group {group_id!r}")
        return response

    def sync_group(self, group_id: str, *, generation_id: int, member_id: str,
                   assignments: Mapping[str, bytes] | None,
                   group_instance_id: str | None) -> bytes:
        client = self._client
        client.check_open()
        what = f"sync of group {group_id!r}"
        with self._lock:
            wait_ms = self._rebalance_timeouts.get((group_id, member_id),
                                                   _DEFAULT_REBALANCE_TIMEOUT_MS)
        deadline = client.api_deadline(wait_ms)
        items = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=bytes(a))
                 for m, a in (assignments or {}).items()]

        def call(node: int) -> bytes:
            def build(version: int) -> Any:
                return SyncGroupRequest(group_id=group_id, generation_id=generation_id,
                                        member_id=member_id,
                                        group_instance_id=group_instance_id,
                                        protocol_type=None, protocol_name=None,
                                        assignments=items)

            response = client.send_to_node(node, SyncGroupRequest, build, versions=(0, 5),
                                           deadline=deadline, extra_timeout_ms=wait_ms)
            check_group_code(response.error_code, group_id, what)
            return bytes(response.assignment or b"")

        return on_coordinator(client, group_id, what, call, deadline)

    def heartbeat(self, group_id: str, *, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> None:
        client = self._client
        client.check_open()
        what = f"heartbeat to group {group_id!r}"

        def call(node: int) -> None:
            def build(version: int) -> Any:
                return HeartbeatRequest(group_id=group_id, generation_id=generation_id,
                                        member_id=member_id,
                                        group_instance_id=group_instance_id)

            response = client.send_to_node(node, HeartbeatRequest, build, versions=(0, 4),
                                           deadline=deadline)
            check_group_code(response.error_code, group_id, what)

        deadline = client.api_deadline()
        on_coordinator(client, group_id, what, call, deadline)

    def leave_group(self, group_id: str, *, member_id: str,
                    group_instance_id: str | None) -> None:
        client = self._client
        client.check_open()
        what = f"leaving group {group_id!r}"
        # Leaving a group the member is no longer in is not an error (the interface says so).
        gone = (E.UNKNOWN_MEMBER_ID, E.GROUP_ID_NOT_FOUND)

        def call(node: int) -> None:
            def build(version: int) -> Any:
                if version >= 3:
                    return LeaveGroupRequest(group_id=group_id, members=[
                        LeaveGroupRequest.MemberIdentity(member_id=member_id,
                                                         group_instance_id=group_instance_id)])
                return LeaveGroupRequest(group_id=group_id, member_id=member_id)

            response = client.send_to_node(node, LeaveGroupRequest, build, versions=(0, 4),
                                           deadline=deadline)
            codes = [response.error_code]
            if response.version >= 3:
                codes += [m.error_code for m in response.members or ()]
            for code in codes:
                if code not in gone:
                    check_group_code(code, group_id, what)

        deadline = client.api_deadline()
        on_coordinator(client, group_id, what, call, deadline)
        with self._lock:
            self._rebalance_timeouts.pop((group_id, member_id), None)
