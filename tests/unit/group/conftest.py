"""Fixtures for the group coordinator tests: a fake clock and a harness that drives
members from the test thread and records the callbacks' answers."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from core.group import (
    ErrorCode,
    GroupCoordinator,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
)

RANGE = [("range", b"range-meta")]


class FakeClock:
    """Milliseconds that move only when a test says so."""

    def __init__(self, start: int = 1_700_000_000_000):
        self.now = start

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


class Replies:
    """A callback that records what it is called with."""

    def __init__(self) -> None:
        self.items: list = []

    def __call__(self, response) -> None:
        self.items.append(response)

    @property
    def done(self) -> bool:
        return bool(self.items)

    def one(self):
        assert len(self.items) == 1, f"expected exactly one answer, got {self.items}"
        return self.items[0]


class Harness:
    """A coordinator on a fake clock, with one-line requests for tests."""

    def __init__(self, coordinator: GroupCoordinator, clock: FakeClock):
        self.coordinator = coordinator
        self.clock = clock

    def join(self, member_id: str = "", *, group: str = "g",
             protocols: Sequence[tuple[str, bytes]] = RANGE, instance: str | None = None,
             session: int = 10_000, rebalance: int = 30_000, client_id: str = "client",
             protocol_type: str = "consumer", require_known: bool = True) -> Replies:
        replies = Replies()
        self.coordinator.join_group(JoinGroupRequest(
            group, member_id, instance, protocol_type, list(protocols), session, rebalance,
            client_id, "/127.0.0.1", require_known), replies)
        return replies

    def join_new(self, **kwargs) -> Replies:
        """A new dynamic member's two JoinGroups: MEMBER_ID_REQUIRED, then with the id."""
        first = self.join("", **kwargs).one()
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
        return self.join(first.member_id, **kwargs)

    def sync(self, member_id: str, generation: int, assignments: dict | None = None, *,
             group: str = "g", instance: str | None = None,
             protocol_name: str | None = None) -> Replies:
        replies = Replies()
        self.coordinator.sync_group(SyncGroupRequest(
            group, generation, member_id, instance, None, protocol_name,
            assignments or {}), replies)
        return replies

    def heartbeat(self, member_id: str, generation: int, *, group: str = "g",
                  instance: str | None = None) -> int:
        return self.coordinator.heartbeat(group, generation, member_id, instance)

    def tick(self, advance_ms: int = 0) -> None:
        self.clock.advance(advance_ms)
        self.coordinator.tick()

    def stable_group(self, count: int, **join_kwargs) -> list[JoinGroupResponse]:
        """``count`` members joined one after another and synced: generation ``count``.
        Returns each member's latest JoinGroup answer."""
        answers: list[JoinGroupResponse] = []
        for _ in range(count):
            pending = [self.join_new(**join_kwargs)]
            for answer in answers:
                # Existing members see the rebalance through a heartbeat and rejoin.
                assert self.heartbeat(answer.member_id, answer.generation_id) == \
                    ErrorCode.REBALANCE_IN_PROGRESS
                pending.append(self.join(answer.member_id, **join_kwargs))
            answers = [p.one() for p in pending]
            leader = next(a for a in answers if a.leader_id == a.member_id)
            syncs = [self.sync(a.member_id, a.generation_id,
                               {m.member_id: m.member_id.encode() for m in leader.members}
                               if a is leader else None)
                     for a in answers]
            assert all(s.one().error_code == ErrorCode.NONE for s in syncs)
        return answers


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(clock):
    """Build a Harness; keyword arguments go to GroupCoordinator (initial delay 0 unless
    given, so single joins complete at once)."""
    def build(store=None, **kwargs) -> Harness:
        kwargs.setdefault("group_initial_rebalance_delay_ms", 0)
        coordinator = GroupCoordinator(store, clock=clock, **kwargs)
        coordinator.load()
        return Harness(coordinator, clock)
    return build


@pytest.fixture
def h(make) -> Harness:
    return make()
