"""Consumer groups of real clients against a ``ferry broker`` subprocess.

For each of confluent-kafka, kafka-python and aiokafka: two members split a topic's
partitions, consume every record exactly once, commit and close; a new member then resumes
from the committed offsets with no duplicates and no gaps. Each member runs on its own
thread (its client object never leaves it); the test waits on a shared condition.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, ConsumerGroupState, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

pytestmark = pytest.mark.integration

PARTITIONS = 4
PER_PARTITION = 10
WAIT_S = 60.0  # a bound on each wait, never a timing under test
#: Short heartbeats so that a member notices a rebalance quickly.
SESSION_MS, HEARTBEAT_MS = 6000, 300

Record = tuple[int, bytes]  # (partition, value)


class Member(Protocol):
    """One group member, used only from the thread that created it."""

    def poll(self) -> list[Record]: ...
    def assignment(self) -> frozenset[int]: ...
    def commit(self) -> None: ...
    def close(self) -> None: ...


# ---------------------------------------------------------------- the three clients

class ConfluentMember:
    def __init__(self, bootstrap: str, group: str, topic: str, **extra: Any) -> None:
        self._c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "auto.offset.reset": "earliest", "enable.auto.commit": False,
                            "session.timeout.ms": SESSION_MS,
                            "heartbeat.interval.ms": HEARTBEAT_MS, **extra})
        self._c.subscribe([topic])

    def poll(self) -> list[Record]:
        out = []
        for m in self._c.consume(num_messages=100, timeout=0.2):
            if m.error() is None:
                out.append((m.partition(), m.value()))
        return out

    def assignment(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self._c.assignment())

    def commit(self) -> None:
        self._c.commit(asynchronous=False)

    def close(self) -> None:
        self._c.close()


class KafkaPythonMember:
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                session_timeout_ms=SESSION_MS,
                                heartbeat_interval_ms=HEARTBEAT_MS)

    def poll(self) -> list[Record]:
        batches = self._c.poll(timeout_ms=200)
        return [(tp.partition, r.value) for tp, records in batches.items() for r in records]

    def assignment(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self._c.assignment())

    def commit(self) -> None:
        self._c.commit()

    def close(self) -> None:
        self._c.close()


class AiokafkaMember:
    """aiokafka is asyncio-only: the member owns an event loop on its thread."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._c = self._run(self._make(bootstrap, group, topic))

    async def _make(self, bootstrap: str, group: str, topic: str) -> AIOKafkaConsumer:
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
        await c.start()
        return c

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def poll(self) -> list[Record]:
        batches = self._run(self._c.getmany(timeout_ms=200))
        return [(tp.partition, r.value) for tp, records in batches.items() for r in records]

    def assignment(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self._c.assignment())

    def commit(self) -> None:
        self._run(self._c.commit())

    def close(self) -> None:
        try:
            self._run(self._c.stop())
        finally:
            self._loop.close()


def produce_confluent(bootstrap: str, topic: str, records: list[Record]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for partition, value in records:
        p.produce(topic, value, partition=partition)
    assert p.flush(30) == 0


def produce_kafka_python(bootstrap: str, topic: str, records: list[Record]) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for partition, value in records:
            p.send(topic, value=value, partition=partition)
        p.flush(timeout=30)
    finally:
        p.close()


def produce_aiokafka(bootstrap: str, topic: str, records: list[Record]) -> None:
    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await p.start()
        try:
            for partition, value in records:
                await p.send(topic, value, partition=partition)
            await p.flush()
        finally:
            await p.stop()
    asyncio.run(run())


@dataclass(frozen=True)
class Client:
    name: str
    member: Callable[[str, str, str], Member]
    produce: Callable[[str, str, list[Record]], None]


CLIENTS = [
    Client("confluent-kafka", ConfluentMember, produce_confluent),
    Client("kafka-python", KafkaPythonMember, produce_kafka_python),
    Client("aiokafka", AiokafkaMember, produce_aiokafka),
]


# ---------------------------------------------------------------- the harness

@dataclass
class MemberThread:
    """Polls one member until stopped, then closes it. ``commit()`` runs the member's
    commit between two polls, on the member's thread."""

    factory: Callable[[], Member]
    cond: threading.Condition
    assignment: frozenset[int] = frozenset()
    records: list[Record] = field(default_factory=list)
    error: BaseException | None = None
    closed: bool = False
    commits: int = 0
    _commit_requests: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> MemberThread:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            member = self.factory()
            try:
                while not self._stop.is_set():
                    records = member.poll()
                    with self.cond:
                        self.records.extend(records)
                        self.assignment = member.assignment()
                        wanted = self._commit_requests > self.commits
                        self.cond.notify_all()
                    if wanted:
                        member.commit()
                        with self.cond:
                            self.commits += 1
                            self.cond.notify_all()
            finally:
                member.close()
        except BaseException as exc:  # reported on the test's thread
            self.error = exc
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def commit(self) -> None:
        """Commit what was consumed so far; returns once the commit is done."""
        with self.cond:
            self._commit_requests += 1
            target = self._commit_requests
            ok = self.cond.wait_for(
                lambda: self.commits >= target or self.error is not None or self.closed, WAIT_S)
        if self.error is not None:
            raise self.error
        assert ok and self.commits >= target, "the member did not commit"

    def request_stop(self) -> None:
        self._stop.set()

    def join(self) -> bool:
        """Wait for the member to close; whether it did."""
        if self._thread is not None:
            self._thread.join(WAIT_S)
            return not self._thread.is_alive()
        return True

    def stop(self) -> None:
        """Close the member (a LeaveGroup, except for static members)."""
        self.request_stop()
        assert self.join(), "member did not close"
        if self.error is not None:
            raise self.error


class Members:
    """Member threads sharing one condition, so a test can wait on all of them."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.started: list[MemberThread] = []

    def start(self, factory: Callable[[], Member]) -> MemberThread:
        m = MemberThread(factory, self.cond).start()
        self.started.append(m)
        return m

    def wait(self, predicate: Callable[[], bool], what: str) -> None:
        def done() -> bool:
            return any(m.error is not None for m in self.started) or predicate()

        with self.cond:
            ok = self.cond.wait_for(done, WAIT_S)
        for m in self.started:
            if m.error is not None:
                raise m.error
        assert ok, f"gave up waiting for {what}"

    def stop_all(self) -> None:
        """Teardown: close whatever a failed test left running."""
        for m in self.started:
            m.request_stop()
        for m in self.started:
            m.join()


@pytest.fixture
def members() -> Iterator[Members]:
    group = Members()
    yield group
    group.stop_all()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def records(round_: int, partitions: int = PARTITIONS) -> list[Record]:
    return [(p, f"r{round_}-p{p}-{i}".encode()) for p in range(partitions)
            for i in range(PER_PARTITION)]


def describe_group(bootstrap: str, group: str) -> Any:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(30)


# ---------------------------------------------------------------- the scenario

@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.name)
def test_two_members_split_commit_and_a_new_member_resumes(broker: Any, members: Members,
                                                          client: Client) -> None:
    topic, group = "events", f"group-{client.name}"
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic, PARTITIONS)
    everything = frozenset(range(PARTITIONS))

    def new_member() -> Member:
        return client.member(bootstrap, group, topic)

    a = members.start(new_member)
    members.wait(lambda: a.assignment == everything, "the first member to own every partition")
    b = members.start(new_member)
    members.wait(lambda: bool(a.assignment) and bool(b.assignment)
                 and not a.assignment & b.assignment
                 and a.assignment | b.assignment == everything,
                 "the rebalance to split the partitions")

    described = describe_group(bootstrap, group)
    assert described.state == ConsumerGroupState.STABLE
    assert sorted(tp.partition for m in described.members
                  for tp in m.assignment.topic_partitions) == sorted(everything)

    first = records(1)
    client.produce(bootstrap, topic, first)
    members.wait(lambda: len(a.records) + len(b.records) >= len(first), "round 1")
    assert sorted(a.records + b.records) == sorted(first)  # each record exactly once
    assert {p for p, _ in a.records} <= a.assignment
    assert {p for p, _ in b.records} <= b.assignment
    # Both commit before either leaves: a LeaveGroup starts a rebalance, and a member that
    # rejoins gives up its partitions and what it consumed but did not commit.
    a.commit()
    b.commit()
    a.stop()
    b.stop()

    second = records(2)
    client.produce(bootstrap, topic, second)
    c = members.start(new_member)
    members.wait(lambda: len(c.records) >= len(second), "the new member to resume")
    assert sorted(c.records) == sorted(second)  # no duplicates of round 1, no gaps
    c.commit()
    c.stop()
