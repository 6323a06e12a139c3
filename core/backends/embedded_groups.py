"""Group membership and group offsets of the embedded backend, over the shared coordinator.

The coordinator completes joins and syncs through callbacks (so the broker can drive it
from asyncio); here each call parks its thread on an Event until the callback fires.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from core.backends import errors as be
from core.backends.translate import error_for_code, group_errors
from core.backends.types import (
    GroupDescription,
    GroupMember,
    GroupMemberDescription,
    JoinResult,
    OffsetAndMetadata,
    TopicPartition,
)
from core.group import JoinGroupRequest, OffsetCommit, SyncGroupRequest
from core.protocol.errors import ErrorCode

__all__ = ["EmbeddedGroupsMixin"]

R = TypeVar("R")

#: Extra time past the rebalance timeout before a blocked join gives up; the coordinator's
#: own timeout normally answers first.
_WAIT_MARGIN_S = 10.0
_HOST = socket.gethostname()


class _Reply:
    """A one-shot slot a coordinator callback fills and a caller waits on."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.value: Any = None

    def __call__(self, value: Any) -> None:
        self.value = value
        self._event.set()

    def wait(self, timeout_s: float, what: str) -> Any:
        if not self._event.wait(timeout_s):
            raise be.BackendUnavailableError(f"{what} did not complete within {timeout_s:.0f} s")
        return self.value


class EmbeddedGroupsMixin:
    """The LogBackend group methods for ``EmbeddedBackend`` (which provides ``_coordinator``
    and ``_check_open``)."""

    _coordinator: Any

    def _check_open(self) -> Any:  # provided by EmbeddedBackend
        raise NotImplementedError

    def join_group(self, group_id: str, *, member_id: str, protocol_type: str,
                   protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int = 45000,
                   rebalance_timeout_ms: int = 300000, group_instance_id: str | None = None,
                   client_id: str = "ferry") -> JoinResult:
        self._check_open()
        for _ in range(2):  # the second round answers MEMBER_ID_REQUIRED (KIP-394)
            reply = _Reply()
            with group_errors(f"join of group {group_id!r}"):
                self._coordinator.join_group(
                    JoinGroupRequest(
                        group_id=group_id,
                        member_id=member_id,
                        group_instance_id=group_instance_id,
                        protocol_type=protocol_type,
                        protocols=[(name, bytes(meta)) for name, meta in protocols],
                        session_timeout_ms=session_timeout_ms,
                        rebalance_timeout_ms=rebalance_timeout_ms,
                        client_id=client_id,
                        client_host=_HOST,
                        require_known_member_id=False,
                    ),
                    reply,
                )
            resp = reply.wait(rebalance_timeout_ms / 1000 + _WAIT_MARGIN_S,
                              f"joining group {group_id!r}")
            if resp.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                member_id = resp.member_id
                continue
            if resp.error_code:
                raise error_for_code(resp.error_code, f"join of group {group_id!r}")
            return JoinResult(
                generation_id=resp.generation_id,
                protocol_type=resp.protocol_type or protocol_type,
                protocol_name=resp.protocol_name or "",
                leader_id=resp.leader_id,
                member_id=resp.member_id,
                members=tuple(GroupMember(m[0], m[1], bytes(m[2])) for m in resp.members),
            )
        raise be.GroupError(f"join of group {group_id!r} kept asking for a member id")

    def sync_group(self, group_id: str, *, generation_id: int, member_id: str,
                   assignments: Mapping[str, bytes] | None = None,
                   group_instance_id: str | None = None) -> bytes:
        self._check_open()
        reply = _Reply()
        request = SyncGroupRequest(
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=None,
            protocol_name=None,
            assignments={k: bytes(v) for k, v in (assignments or {}).items()},
        )
        with group_errors(f"sync of group {group_id!r}"):
            self._coordinator.sync_group(request, reply)
        # A follower waits for the leader's sync, which the session timeout bounds; the
        # coordinator answers REBALANCE_IN_PROGRESS if the leader disappears.
        resp = reply.wait(1800 + _WAIT_MARGIN_S, f"sync of group {group_id!r}")
        if resp.error_code:
            raise error_for_code(resp.error_code, f"sync of group {group_id!r}")
        return bytes(resp.assignment)

    def heartbeat(self, group_id: str, *, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> None:
        self._check_open()
        with group_errors(f"heartbeat to group {group_id!r}"):
            code = self._coordinator.heartbeat(group_id, generation_id, member_id,
                                               group_instance_id)
        if code:
            raise error_for_code(code, f"heartbeat to group {group_id!r}")

    def leave_group(self, group_id: str, *, member_id: str,
                    group_instance_id: str | None = None) -> None:
        self._check_open()
        with group_errors(f"leaving group {group_id!r}"):
            self._coordinator.leave_group(group_id, [(member_id, group_instance_id)])

    def commit_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                       *, generation_id: int = -1, member_id: str = "",
                       group_instance_id: str | None = None) -> None:
        self._check_open()
        if not group_id:
            raise be.GroupError("invalid group id: it must not be empty")
        request = {
            (tp[0], tp[1]): OffsetCommit(
                offset=om.offset, leader_epoch=om.leader_epoch, metadata=om.metadata,
                commit_timestamp=om.commit_timestamp,
            )
            for tp, om in offsets.items()
        }
        with group_errors(f"offset commit of group {group_id!r}"):
            results = self._coordinator.commit_offsets(group_id, generation_id, member_id,
                                                       group_instance_id, request)
        for (topic, partition), code in results.items():
            if code:
                raise error_for_code(
                    code, f"offset commit of group {group_id!r} for {topic}-{partition}")

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None
                      ) -> dict[TopicPartition, OffsetAndMetadata]:
        self._check_open()
        wanted = None if partitions is None else [(tp[0], tp[1]) for tp in partitions]
        with group_errors(f"offset fetch of group {group_id!r}"):
            committed = self._coordinator.fetch_offsets(group_id, wanted)
        return {
            TopicPartition(topic, partition): OffsetAndMetadata(
                c.offset, c.metadata, c.leader_epoch, c.commit_timestamp)
            for (topic, partition), c in committed.items()
        }

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        what = f"deleting offsets of group {group_id!r}"
        wanted = [(tp[0], tp[1]) for tp in partitions]
        with group_errors(what):
            error, results = self._coordinator.delete_offsets(group_id, wanted)
        if error:
            raise error_for_code(error, what)
        for (topic, partition), code in results.items():
            if code:
                raise error_for_code(code, f"{what} for {topic}-{partition}")

    def list_groups(self) -> list[tuple[str, str]]:
        self._check_open()
        with group_errors("listing groups"):
            return sorted((g[0], g[1]) for g in self._coordinator.list_groups())

    def describe_group(self, group_id: str) -> GroupDescription:
        self._check_open()
        with group_errors(f"describing group {group_id!r}"):
            s = self._coordinator.describe_group(group_id)
        return GroupDescription(
            group_id=group_id,
            state=s.state,
            protocol_type=s.protocol_type or "",
            protocol_name=s.protocol_name or "",
            generation_id=s.generation_id,
            members=tuple(
                GroupMemberDescription(m.member_id, m.group_instance_id, m.client_id,
                                       m.client_host, bytes(m.metadata), bytes(m.assignment))
                for m in s.members
            ),
        )
