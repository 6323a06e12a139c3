"""The group handlers driven directly: kafka-python requests at several versions in, a real
GroupCoordinator on a tmp LogManager behind them, wire-encoded responses out."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

import core.broker.handlers.delete_groups
import core.broker.handlers.describe_groups
import core.broker.handlers.find_coordinator
import core.broker.handlers.heartbeat
import core.broker.handlers.join_group
import core.broker.handlers.leave_group
import core.broker.handlers.list_groups
import core.broker.handlers.offset_commit
import core.broker.handlers.offset_fetch
import core.broker.handlers.sync_group  # noqa: F401 - the imports register the handlers
from core.broker.config import BrokerConfig
from core.broker.registry import lookup
from core.broker.state import BrokerState, RequestContext
from core.group import GroupCoordinator, LogOffsetStore
from core.log.manager import LogManager
from core.protocol.errors import ErrorCode

Protocol = JoinGroupRequest.JoinGroupRequestProtocol
Assignment = SyncGroupRequest.SyncGroupRequestAssignment
OffsetTopic = OffsetCommitRequest.OffsetCommitRequestTopic
OffsetPartition = OffsetTopic.OffsetCommitRequestPartition
FetchTopic = OffsetFetchRequest.OffsetFetchRequestTopic
Identity = LeaveGroupRequest.MemberIdentity

HOST, PORT, NODE = "broker.test", 19092, 7
RANGE = [Protocol(name="range", metadata=b"range-subscription")]


class FakeClock:
    """Coordinator milliseconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


class Broker:
    """A BrokerState on a real LogManager and GroupCoordinator, and a way to call handlers
    the way the server does: the request and the response both cross the wire codec."""

    def __init__(self, state: BrokerState, loop: asyncio.AbstractEventLoop, clock: FakeClock):
        self.state = state
        self.loop = loop
        self.clock = clock
        self._correlation = itertools.count(1)

    async def acall(self, request_class: type, version: int, **fields: Any) -> Any:
        spec = lookup(request_class.API_KEY)
        assert spec is not None and spec.min_version <= version <= spec.max_version
        request = request_class.decode(
            request_class(version=version, **fields).encode(version=version), version=version)
        ctx = RequestContext(request_class.API_KEY, version, next(self._correlation),
                             "client-1", "127.0.0.1", "conn-1", request)
        response = await spec.handler(self.state, ctx)
        response_class = type(response)[None]
        assert response_class.API_KEY == request_class.API_KEY
        return response_class.decode(response.encode(version=version), version=version)

    def call(self, request_class: type, version: int, **fields: Any) -> Any:
        return self.loop.run_until_complete(self.acall(request_class, version, **fields))

    def gather(self, *coros: Any) -> list[Any]:
        async def run() -> list[Any]:
            return list(await asyncio.gather(*coros))
        return self.loop.run_until_complete(run())

    # ------------------------------------------------------------ group shorthands

    def join(self, version: int, member_id: str = "", *, group: str = "g",
             instance: str | None = None, protocols: list = RANGE) -> Any:
        return self.call(JoinGroupRequest, version, **self._join_fields(
            member_id, group, instance, protocols))

    async def ajoin(self, version: int, member_id: str = "", *, group: str = "g",
                    instance: str | None = None, protocols: list = RANGE) -> Any:
        return await self.acall(JoinGroupRequest, version, **self._join_fields(
            member_id, group, instance, protocols))

    @staticmethod
    def _join_fields(member_id: str, group: str, instance: str | None,
                     protocols: list) -> dict[str, Any]:
        return dict(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                    member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                    protocols=protocols)

    def join_new(self, version: int = 5, **kwargs: Any) -> Any:
        first = self.join(version, **kwargs)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        return self.join(version, first.member_id, **kwargs)

    def sync(self, version: int, member_id: str, generation: int,
             assignments: dict[str, bytes] | None = None, group: str = "g", **extra: Any) -> Any:
        return self.call(SyncGroupRequest, version, group_id=group, generation_id=generation,
                         member_id=member_id, assignments=[
                             Assignment(member_id=m, assignment=a)
                             for m, a in (assignments or {}).items()], **extra)

    def stable_member(self, group: str = "g") -> Any:
        """One member that joined and synced: generation 1, Stable."""
        joined = self.join_new(group=group)
        assert joined.error_code == ErrorCode.NONE
        synced = self.sync(3, joined.member_id, joined.generation_id,
                           {joined.member_id: b"assignment-1"}, group=group)
        assert synced.error_code == ErrorCode.NONE
        return joined


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    loop = asyncio.new_event_loop()
    clock = FakeClock()
    manager = LogManager.open(tmp_path / "data", background=False)
    manager.create_topic("orders", 3)
    coordinator = GroupCoordinator(
        LogOffsetStore(manager, partitions=3), clock=clock,
        group_initial_rebalance_delay_ms=0,
        partition_exists=lambda t, p: t in manager.topics() and p < manager.topic(t).partitions)
    coordinator.load()
    config = BrokerConfig.parse({"node.id": str(NODE)})
    state = BrokerState(config=config, manager=manager, coordinator=coordinator,
                        producers=None, node_id=NODE, advertised_host=HOST,
                        advertised_port=PORT, cluster_id="cluster", loop=loop)
    yield Broker(state, loop, clock)
    coordinator.close()
    manager.close()
    loop.close()


# ---------------------------------------------------------------- FindCoordinator

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_names_this_broker_for_a_group(broker: Broker, version: int) -> None:
    r = broker.call(FindCoordinatorRequest, version, key="g", key_type=0)
    assert (r.error_code, r.node_id, r.host, r.port) == (ErrorCode.NONE, NODE, HOST, PORT)


def test_find_coordinator_v4_answers_each_key(broker: Broker) -> None:
    r = broker.call(FindCoordinatorRequest, 4, key_type=0, coordinator_keys=["a", "b"])
    assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in r.coordinators] == [
        ("a", 0, NODE, HOST, PORT), ("b", 0, NODE, HOST, PORT)]


@pytest.mark.parametrize("version", [1, 4])
def test_find_coordinator_has_no_transaction_coordinator(broker: Broker, version: int) -> None:
    r = broker.call(FindCoordinatorRequest, version, key="tx", key_type=1,
                    coordinator_keys=["tx"])
    answer = r.coordinators[0] if version >= 4 else r
    assert answer.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "transactions are not supported" in answer.error_message
    assert answer.node_id == -1


def test_find_coordinator_rejects_an_unknown_key_type(broker: Broker) -> None:
    r = broker.call(FindCoordinatorRequest, 2, key="x", key_type=5)
    assert r.error_code == ErrorCode.INVALID_REQUEST


# ---------------------------------------------------------------- JoinGroup / SyncGroup

@pytest.mark.parametrize("version", [2, 3])
def test_join_before_v4_gets_a_member_id_at_once(broker: Broker, version: int) -> None:
    r = broker.join(version)
    assert r.error_code == ErrorCode.NONE
    assert r.member_id.startswith("client-1-")
    assert (r.generation_id, r.leader, r.protocol_name) == (1, r.member_id, "range")
    assert [(m.member_id, m.metadata) for m in r.members] == [
        (r.member_id, b"range-subscription")]


@pytest.mark.parametrize("version", [4, 5, 6, 7])
def test_join_from_v4_requires_a_known_member_id(broker: Broker, version: int) -> None:
    first = broker.join(version)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("client-1-")
    second = broker.join(version, first.member_id)
    assert second.error_code == ErrorCode.NONE
    assert (second.member_id, second.generation_id) == (first.member_id, 1)
    if version >= 7:
        assert (second.protocol_type, second.protocol_name) == ("consumer", "range")
        assert first.protocol_type is None and first.protocol_name is None


def test_static_member_joins_without_member_id_round_trip(broker: Broker) -> None:
    r = broker.join(5, instance="host-a")
    assert r.error_code == ErrorCode.NONE
    assert r.member_id.startswith("host-a-")
    assert [(m.member_id, m.group_instance_id) for m in r.members] == [
        (r.member_id, "host-a")]


def test_join_with_an_unknown_member_id_is_refused(broker: Broker) -> None:
    r = broker.join(5, "nobody")
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert r.protocol_name == ""  # non-nullable before v7


def test_second_member_rebalances_and_sync_hands_out_assignments(broker: Broker) -> None:
    a = broker.stable_member()
    b_id = broker.join(5).member_id  # MEMBER_ID_REQUIRED

    async def first_member_rejoins() -> Any:
        # b's JoinGroup is already waiting: a learns of the rebalance by heartbeat.
        hb = await broker.acall(HeartbeatRequest, 1, group_id="g", generation_id=1,
                                member_id=a.member_id)
        assert hb.error_code == ErrorCode.REBALANCE_IN_PROGRESS
        return await broker.ajoin(5, a.member_id)

    b_join, a_join = broker.gather(broker.ajoin(5, b_id), first_member_rejoins())
    assert a_join.generation_id == b_join.generation_id == 2
    leader, follower = (a_join, b_join) if a_join.leader == a_join.member_id else (b_join, a_join)
    assert sorted(m.member_id for m in leader.members) == sorted([a.member_id, b_id])
    assert follower.members == []

    follower_sync, leader_sync = broker.gather(
        broker.acall(SyncGroupRequest, 5, group_id="g", generation_id=2,
                     member_id=follower.member_id, protocol_type="consumer",
                     protocol_name="range", assignments=[]),
        broker.acall(SyncGroupRequest, 5, group_id="g", generation_id=2,
                     member_id=leader.member_id, protocol_type="consumer",
                     protocol_name="range", assignments=[
                         Assignment(member_id=leader.member_id, assignment=b"L"),
                         Assignment(member_id=follower.member_id, assignment=b"F")]))
    assert (leader_sync.error_code, leader_sync.assignment) == (ErrorCode.NONE, b"L")
    assert (follower_sync.error_code, follower_sync.assignment) == (ErrorCode.NONE, b"F")
    assert (follower_sync.protocol_type, follower_sync.protocol_name) == ("consumer", "range")


def test_rebalance_completed_by_the_tick_thread_answers_the_waiting_join(broker: Broker
                                                                         ) -> None:
    a = broker.stable_member()
    b_id = broker.join(5).member_id
    coordinator = broker.state.coordinator

    async def scenario() -> Any:
        waiting = asyncio.ensure_future(broker.ajoin(5, b_id))
        for _ in range(100):  # let the handler reach its await
            if coordinator.describe_group("g").state == "PreparingRebalance":
                break
            await asyncio.sleep(0)
        # ``a`` never rejoins: the rebalance timeout ends the join phase, on the thread
        # that ticks the coordinator (the broker's ticker).
        broker.clock.now += 30_001
        ticker = threading.Thread(target=coordinator.tick)
        ticker.start()
        try:
            return await asyncio.wait_for(waiting, 10)  # a bound, not a timing
        finally:
            ticker.join()

    joined = broker.loop.run_until_complete(scenario())
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 2, b_id)
    assert [m.member_id for m in joined.members] == [b_id]
    assert a.member_id not in [m.member_id for m in coordinator.describe_group("g").members]


@pytest.mark.parametrize("version", [0, 3, 4])
def test_sync_errors(broker: Broker, version: int) -> None:
    a = broker.stable_member()
    assert broker.sync(version, a.member_id, 99).error_code == ErrorCode.ILLEGAL_GENERATION
    assert broker.sync(version, "ghost", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    again = broker.sync(version, a.member_id, 1)
    assert (again.error_code, again.assignment) == (ErrorCode.NONE, b"assignment-1")


def test_sync_v5_checks_the_protocol(broker: Broker) -> None:
    a = broker.stable_member()
    r = broker.sync(5, a.member_id, 1, protocol_type="consumer", protocol_name="roundrobin")
    assert r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


# ---------------------------------------------------------------- Heartbeat / LeaveGroup

@pytest.mark.parametrize("version", [0, 3, 4])
def test_heartbeat(broker: Broker, version: int) -> None:
    a = broker.stable_member()

    def beat(member_id: str, generation: int) -> int:
        return broker.call(HeartbeatRequest, version, group_id="g", generation_id=generation,
                           member_id=member_id).error_code

    assert beat(a.member_id, 1) == ErrorCode.NONE
    assert beat(a.member_id, 0) == ErrorCode.ILLEGAL_GENERATION
    assert beat("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_leave_v0_answers_with_the_member_error(broker: Broker) -> None:
    a = broker.stable_member()
    r = broker.call(LeaveGroupRequest, 0, group_id="g", member_id=a.member_id)
    assert r.error_code == ErrorCode.NONE
    assert broker.call(LeaveGroupRequest, 2, group_id="g",
                       member_id=a.member_id).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert broker.state.coordinator.describe_group("g").state == "Empty"


@pytest.mark.parametrize("version", [3, 4])
def test_leave_batch_reports_each_member(broker: Broker, version: int) -> None:
    static = broker.join(5, instance="host-a")
    r = broker.call(LeaveGroupRequest, version, group_id="g", members=[
        Identity(member_id="", group_instance_id="host-a"),
        Identity(member_id="ghost", group_instance_id=None)])
    assert r.error_code == ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        ("", "host-a", ErrorCode.NONE), ("ghost", None, ErrorCode.UNKNOWN_MEMBER_ID)]
    assert static.member_id not in [
        m.member_id for m in broker.state.coordinator.describe_group("g").members]


def test_leave_with_an_empty_group_id_is_a_top_level_error(broker: Broker) -> None:
    r = broker.call(LeaveGroupRequest, 3, group_id="", members=[Identity(member_id="m")])
    assert (r.error_code, r.members) == (ErrorCode.INVALID_GROUP_ID, [])


# ---------------------------------------------------------------- offsets

def commit(broker: Broker, version: int, partitions: dict[int, int], *, group: str = "g",
           generation: int = -1, member_id: str = "", topic: str = "orders") -> dict[int, int]:
    r = broker.call(OffsetCommitRequest, version, group_id=group,
                    generation_id_or_member_epoch=generation, member_id=member_id,
                    topics=[OffsetTopic(name=topic, partitions=[
                        OffsetPartition(partition_index=p, committed_offset=o,
                                        committed_leader_epoch=3, committed_metadata=None)
                        for p, o in partitions.items()])])
    [t] = r.topics
    assert t.name == topic
    return {p.partition_index: p.error_code for p in t.partitions}


@pytest.mark.parametrize("version", [2, 5, 6, 7, 8])
def test_simple_commit_then_fetch(broker: Broker, version: int) -> None:
    assert commit(broker, version, {0: 10, 2: 30}) == {0: 0, 2: 0}
    stored = broker.state.coordinator.fetch_offsets("g", [("orders", 0)])[("orders", 0)]
    assert stored.commit_timestamp == broker.clock.now  # stamped by the coordinator
    assert stored.leader_epoch == (3 if version >= 6 else -1)
    r = broker.call(OffsetFetchRequest, 1, group_id="g", topics=[
        FetchTopic(name="orders", partition_indexes=[0, 1, 2])])
    [t] = r.topics
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in t.partitions] == [(0, 10, "", 0), (1, -1, "", 0), (2, 30, "", 0)]


@pytest.mark.parametrize("version", [2, 5, 7])
def test_fetch_with_null_topics_returns_every_committed_partition(broker: Broker,
                                                                  version: int) -> None:
    broker.state.manager.create_topic("audit", 1)
    commit(broker, 6, {1: 5, 0: 4})
    commit(broker, 6, {0: 9}, topic="audit")
    r = broker.call(OffsetFetchRequest, version, group_id="g", topics=None,
                    require_stable=True)
    assert r.error_code == ErrorCode.NONE
    got = {(t.name, p.partition_index): p.committed_offset
           for t in r.topics for p in t.partitions}
    assert got == {("audit", 0): 9, ("orders", 0): 4, ("orders", 1): 5}
    if version >= 5:
        assert {p.committed_leader_epoch for t in r.topics for p in t.partitions} == {3}


def test_fetch_of_an_unknown_group_reports_no_offsets(broker: Broker) -> None:
    r = broker.call(OffsetFetchRequest, 3, group_id="nobody", topics=[
        FetchTopic(name="orders", partition_indexes=[0])])
    assert [(p.committed_offset, p.error_code) for p in r.topics[0].partitions] == [(-1, 0)]
    assert broker.call(OffsetFetchRequest, 3, group_id="nobody", topics=None).topics == []


def test_commit_errors(broker: Broker) -> None:
    a = broker.stable_member()
    assert commit(broker, 8, {0: 1}, generation=1, member_id=a.member_id) == {0: 0}
    assert commit(broker, 8, {0: 1}, generation=7, member_id=a.member_id) == {
        0: ErrorCode.ILLEGAL_GENERATION}
    # A simple commit while the group has members.
    assert commit(broker, 2, {0: 1}) == {0: ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(broker, 2, {5: 1}, group="other") == {5: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert commit(broker, 2, {0: 1}, group="other", topic="missing") == {
        0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_offset_fetch_while_loading(broker: Broker, tmp_path: Path) -> None:
    # A coordinator that has not loaded its offsets yet.
    broker.state.coordinator = GroupCoordinator(LogOffsetStore(broker.state.manager))
    v1 = broker.call(OffsetFetchRequest, 1, group_id="g", topics=[
        FetchTopic(name="orders", partition_indexes=[0])])
    assert [(p.committed_offset, p.error_code) for p in v1.topics[0].partitions] == [
        (-1, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]
    v2 = broker.call(OffsetFetchRequest, 2, group_id="g", topics=None)
    assert (v2.error_code, v2.topics) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [])
    lg = broker.call(ListGroupsRequest, 0)
    assert (lg.error_code, lg.groups) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [])


# ---------------------------------------------------------------- admin group APIs

@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_describe_groups(broker: Broker, version: int) -> None:
    a = broker.stable_member()
    r = broker.call(DescribeGroupsRequest, version, groups=["g", "unknown"],
                    include_authorized_operations=True)
    g, unknown = r.groups
    assert (g.error_code, g.group_id, g.group_state, g.protocol_type, g.protocol_data) == (
        0, "g", "Stable", "consumer", "range")
    [m] = g.members
    assert (m.member_id, m.client_id, m.client_host) == (a.member_id, "client-1", "/127.0.0.1")
    assert (m.member_metadata, m.member_assignment) == (b"range-subscription", b"assignment-1")
    assert (unknown.group_state, unknown.members) == ("Dead", [])
    if version >= 3:
        assert g.authorized_operations == {3, 6, 8}  # READ, DELETE, DESCRIBE


def test_describe_groups_v3_without_operations(broker: Broker) -> None:
    r = broker.call(DescribeGroupsRequest, 3, groups=["g"], include_authorized_operations=False)
    assert r.groups[0].authorized_operations is None  # Integer.MIN_VALUE on the wire


@pytest.mark.parametrize("version", [0, 1, 3, 4])
def test_list_groups(broker: Broker, version: int) -> None:
    broker.stable_member("live")
    commit(broker, 2, {0: 1}, group="idle")
    r = broker.call(ListGroupsRequest, version, states_filter=[])
    assert r.error_code == ErrorCode.NONE
    assert sorted((g.group_id, g.protocol_type) for g in r.groups) == [
        ("idle", ""), ("live", "consumer")]
    if version >= 4:
        assert {g.group_id: g.group_state for g in r.groups} == {"idle": "Empty",
                                                                 "live": "Stable"}
        only = broker.call(ListGroupsRequest, 4, states_filter=["stable"])
        assert [g.group_id for g in only.groups] == ["live"]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_groups(broker: Broker, version: int) -> None:
    broker.stable_member("live")
    commit(broker, 2, {0: 1}, group="idle")
    r = broker.call(DeleteGroupsRequest, version, groups_names=["live", "idle", "nobody"])
    assert {x.group_id: x.error_code for x in r.results} == {
        "live": ErrorCode.NON_EMPTY_GROUP, "idle": ErrorCode.NONE,
        "nobody": ErrorCode.GROUP_ID_NOT_FOUND}
    assert broker.state.coordinator.fetch_offsets("idle", None) == {}
