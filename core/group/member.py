"""One member of a classic group: its protocols, timeouts, assignment and waiting requests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from core.group.api import JoinGroupResponse, SyncGroupResponse

__all__ = ["JoinCallback", "Member", "SyncCallback"]

JoinCallback = Callable[[JoinGroupResponse], None]
SyncCallback = Callable[[SyncGroupResponse], None]


@dataclass(eq=False)
class Member:
    """A member's state, owned by its Group and guarded by the coordinator's lock."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # Set while a JoinGroup / SyncGroup of this member waits for the rebalance; cleared when
    # answered (core.group.outbox). A waiting member counts as alive (Kafka's rule).
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    # True from the first JoinGroup until it is answered: such a member has never had a
    # session, so it expires at its join deadline even while waiting.
    is_new: bool = False
    heartbeat_deadline_ms: int = 0
    _names: frozenset[str] = field(default=frozenset(), repr=False)

    def __post_init__(self) -> None:
        self._names = frozenset(name for name, _ in self.protocols)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    @property
    def protocol_names(self) -> frozenset[str]:
        return self._names

    def set_protocols(self, protocols: list[tuple[str, bytes]]) -> None:
        self.protocols = protocols
        self._names = frozenset(name for name, _ in protocols)

    def metadata(self, protocol: str) -> bytes:
        """This member's metadata for ``protocol`` (which it must support)."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """Whether ``protocols`` equal this member's, in order and byte for byte."""
        return list(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The first protocol in this member's preference order that all members support."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def touch(self, now_ms: int) -> None:
        """Start a new session period: the member is alive until now + session timeout."""
        self.heartbeat_deadline_ms = now_ms + self.session_timeout_ms

    def session_expired(self, now_ms: int) -> bool:
        """Whether the member failed its session at ``now_ms`` (Kafka's hasSatisfiedHeartbeat).

        A member waiting in a JoinGroup or SyncGroup is kept alive, since it cannot
        heartbeat while blocked; a new member is not, since it has no session yet.
        """
        if now_ms < self.heartbeat_deadline_ms:
            return False
        if self.is_new:
            return True
        return not (self.awaiting_join or self.awaiting_sync)
