"""Worker group membership on real backends: an embedded log in this process, and a
``ferry broker`` subprocess through ``kafka://``. Each worker is a WorkerGroupMember driven
by a thread that calls ``poll`` like a herder's main loop; a shared ledger records what runs
where and flags anything started while it still runs on another live worker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess

from connect.api.errors import ConfigError
from connect.runtime.distributed.assignor import configured_work
from connect.runtime.distributed.membership import (
    ConfigSnapshotView,
    WorkerGroupConfig,
    WorkerGroupMember,
)
from connect.runtime.distributed.protocol import (
    ConnectorsAndTasks,
    ConnectProtocol,
    ExtendedAssignment,
)
from core.backends import open_backend
from core.backends.base import LogBackend

COUNTS = {"c1": 3, "c2": 3, "c3": 3}
ALL = configured_work(COUNTS)
WAIT_S = 30.0
#: The embedded coordinator's smallest session timeout (group.min.session.timeout.ms).
SESSION_MS = 6000


def wait_until(what: str, check: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.05)


class Ledger:
    """What runs where across the cluster, and any work started while running elsewhere."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.where: dict[object, str] = {}
        self.violations: list[str] = []

    def start(self, worker: str, work: ConnectorsAndTasks) -> None:
        with self.lock:
            for item in list(work.connectors) + list(work.tasks):
                other = self.where.get(item)
                if other is not None and other != worker:
                    self.violations.append(f"{item} started on {worker} while on {other}")
                self.where[item] = worker

    def stop(self, worker: str, work: ConnectorsAndTasks) -> None:
        with self.lock:
            for item in list(work.connectors) + list(work.tasks):
                if self.where.get(item) == worker:
                    del self.where[item]


class Worker:
    """A member plus the listener a herder would be, polled by its own thread."""

    def __init__(self, backend: LogBackend, url: str, ledger: Ledger, config: WorkerGroupConfig,
                 counts: dict[str, int] | None = None, offset: int = 0) -> None:
        self.url = url
        self.ledger = ledger
        self.lock = threading.Lock()
        self.snapshot = ConfigSnapshotView(offset, dict(COUNTS if counts is None else counts))
        self.catch_up_to: ConfigSnapshotView | None = None
        self.running = ConnectorsAndTasks()
        self.assignments: list[tuple[int, ExtendedAssignment]] = []
        self.revocations: list[ConnectorsAndTasks] = []
        self.lost = 0
        self.member = WorkerGroupMember(backend, url, self, config)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"herder-{url}")

    # -- the listener
    def config_snapshot(self) -> ConfigSnapshotView:
        with self.lock:
            return self.snapshot

    def on_revoked(self, revoked: ConnectorsAndTasks) -> None:
        with self.lock:
            assert (revoked - self.running).is_empty(), "revoked work that was not running"
            self.running = self.running - revoked
            self.revocations.append(revoked)
        self.ledger.stop(self.url, revoked)

    def on_assigned(self, assignment: ExtendedAssignment, generation: int) -> None:
        with self.lock:
            if assignment.failed:
                if self.catch_up_to is not None:
                    self.snapshot = self.catch_up_to
                self.assignments.append((generation, assignment))
                return
            new = assignment.assigned - self.running
            self.running = assignment.assigned
            self.assignments.append((generation, assignment))
        self.ledger.start(self.url, new)

    def on_lost(self) -> None:
        with self.lock:
            lost, self.running = self.running, ConnectorsAndTasks()
            self.lost += 1
        self.ledger.stop(self.url, lost)

    # -- the herder's loop
    def _loop(self) -> None:
        while not self._stop.is_set():
            self.member.poll(0.2)

    def start(self) -> Worker:
        self.member.start()
        self._thread.start()
        return self

    def stop(self, *, leave: bool = True) -> None:
        self.member.stop(leave=leave)
        self._stop.set()
        self.member.wakeup()
        self._thread.join(10)
        # A stopped (or killed) worker runs nothing any more.
        with self.lock:
            gone, self.running = self.running, ConnectorsAndTasks()
        self.ledger.stop(self.url, gone)

    def current(self) -> ConnectorsAndTasks:
        with self.lock:
            return self.running

    def last(self) -> tuple[int, ExtendedAssignment] | None:
        with self.lock:
            return self.assignments[-1] if self.assignments else None


def union(workers) -> list:
    items: list = []
    for w in workers:
        work = w.current()
        items += list(work.connectors) + list(work.tasks)
    return items


def settled(workers, expected: ConnectorsAndTasks = ALL) -> bool:
    """Every worker completed the same generation and together they run ``expected`` once."""
    lasts = [w.last() for w in workers]
    if any(last is None for last in lasts) or len({g for g, _ in lasts}) != 1:
        return False
    if any(w.member.rebalancing for w in workers):
        return False
    items = union(workers)
    return len(items) == len(set(items)) and set(items) == (
        set(expected.connectors) | set(expected.tasks))


def spread_ok(workers) -> bool:
    c = [len(w.current().connectors) for w in workers]
    t = [len(w.current().tasks) for w in workers]
    return max(c) - min(c) <= 1 and max(t) - min(t) <= 1


class Cluster:
    def __init__(self, open_log: Callable[[], LogBackend], group: str, **config) -> None:
        self.open_log = open_log
        self.ledger = Ledger()
        self.config = WorkerGroupConfig(group_id=group, session_timeout_ms=SESSION_MS,
                                        heartbeat_interval_ms=1000, rebalance_timeout_ms=20000,
                                        **config)
        self.workers: list[Worker] = []
        self.backends: list[LogBackend] = []

    def add(self, name: str, **kwargs) -> Worker:
        backend = self.open_log()
        self.backends.append(backend)
        worker = Worker(backend, f"http://{name}:8083", self.ledger, self.config, **kwargs)
        self.workers.append(worker)
        return worker.start()

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        for b in self.backends:
            b.close()


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    clusters: list[Cluster] = []

    def make(**config) -> Cluster:
        c = Cluster(lambda: open_backend(f"embedded:{tmp_path / 'log'}"), "connect-test",
                    **config)
        clusters.append(c)
        return c

    yield make
    for c in clusters:
        c.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "broker-data",
                      {"group.initial.rebalance.delay.ms": "0",
                       "offsets.topic.num.partitions": "2"}, tmp_path / "broker.log")
    b.start()
    try:
        yield b
    finally:
        b.stop()


def kafka_cluster(broker: BrokerProcess, **config) -> Cluster:
    client = {"request.timeout.ms": "10000", "default.api.timeout.ms": "15000"}
    return Cluster(lambda: open_backend(f"kafka://{broker.bootstrap}", client), "connect-test",
                   **config)


def check_three_workers_form_one_group(cluster: Cluster) -> list[Worker]:
    workers = [cluster.add(n) for n in ("w1", "w2", "w3")]
    wait_until("three workers to share the work", lambda: settled(workers))
    assert spread_ok(workers)
    leaders = [w for w in workers if w.member.is_leader]
    assert len(leaders) == 1
    leader = leaders[0]
    assert {w.member.leader_url for w in workers} == {leader.url}
    assert {w.member.leader_id for w in workers} == {leader.member.member_id}
    assert all(w.member.protocol is ConnectProtocol.SESSIONED for w in workers)
    for w in workers:
        for task in w.current().tasks:
            assert leader.member.owner_url(task) == w.url
        assert w.member.owner_url("c1") is None or w is leader
    assert cluster.ledger.violations == []
    return workers


def check_leaving_worker_keeps_the_others_work(cluster: Cluster, workers: list[Worker]) -> None:
    before = {w.url: w.current() for w in workers}
    revocations = {w.url: len(w.revocations) for w in workers}
    leaving = workers[1]
    leaving.stop()
    survivors = [workers[0], workers[2]]
    wait_until("the survivors to take over", lambda: settled(survivors))
    for w in survivors:
        assert (before[w.url] - w.current()).is_empty(), f"{w.url} lost work it had"
        assert len(w.revocations) == revocations[w.url]
    assert spread_ok(survivors)
    assert cluster.ledger.violations == []


def test_three_members_share_the_work_and_a_leaving_one_hands_it_over(embedded):
    cluster = embedded(scheduled_rebalance_max_delay_ms=0)
    workers = check_three_workers_form_one_group(cluster)
    check_leaving_worker_keeps_the_others_work(cluster, workers)


def test_joining_worker_takes_surplus_without_duplicates(embedded):
    cluster = embedded()
    first = cluster.add("w1")
    wait_until("w1 to run everything", lambda: settled([first]))
    second = cluster.add("w2")
    wait_until("w2 to get half", lambda: settled([first, second]) and spread_ok([first, second]))
    assert first.revocations and not second.revocations
    assert cluster.ledger.violations == []


def test_new_connector_after_request_rejoin_moves_nothing(embedded):
    cluster = embedded()
    workers = [cluster.add(n) for n in ("w1", "w2")]
    wait_until("two workers to settle", lambda: settled(workers))
    before = {w.url: w.current() for w in workers}
    more = dict(COUNTS, c4=2)
    for w in workers:
        with w.lock:
            w.snapshot = ConfigSnapshotView(1, more)
    leader = next(w for w in workers if w.member.is_leader)
    leader.member.request_rejoin()
    wait_until("c4 to run", lambda: settled(workers, configured_work(more)))
    for w in workers:
        assert (before[w.url] - w.current()).is_empty()
    assert cluster.ledger.violations == []


def test_config_mismatch_makes_everyone_catch_up_and_rejoin(embedded):
    cluster = embedded()
    leader = cluster.add("w1", offset=5)
    wait_until("w1 to lead", lambda: settled([leader]))
    newer = ConfigSnapshotView(7, dict(COUNTS))
    leader.catch_up_to = newer
    follower = cluster.add("w2", offset=7)
    wait_until("both to settle on offset 7", lambda: settled([leader, follower])
               and leader.last()[1].config_offset == 7)
    failed = [a for _, a in leader.assignments if a.failed]
    assert failed and failed[0].config_offset == 7
    assert leader.member.is_leader and cluster.ledger.violations == []


@pytest.mark.slow
def test_killed_member_is_expired_and_its_work_held_then_reassigned(embedded):
    delay_ms = 3000
    cluster = embedded(scheduled_rebalance_max_delay_ms=delay_ms)
    workers = [cluster.add(n) for n in ("w1", "w2", "w3")]
    wait_until("three workers to settle", lambda: settled(workers))
    victim = next(w for w in workers if not w.member.is_leader)
    survivors = [w for w in workers if w is not victim]
    victims_work = victim.current()
    before = {w.url: w.current() for w in survivors}
    victim.stop(leave=False)  # no LeaveGroup: the coordinator must expire the session

    def holding() -> bool:
        lasts = [w.last() for w in survivors]
        return all(a.delay_ms > 0 for _, a in lasts) and len({g for g, _ in lasts}) == 1

    wait_until("the survivors to hold the lost work", holding)
    held = set(union(survivors))
    assert not held & (set(victims_work.connectors) | set(victims_work.tasks))
    wait_until("the lost work to be reassigned", lambda: settled(survivors))
    for w in survivors:
        assert (before[w.url] - w.current()).is_empty()
    assert spread_ok(survivors) and cluster.ledger.violations == []


@pytest.mark.slow
def test_restarted_worker_gets_its_work_back_without_the_delay(embedded):
    cluster = embedded(scheduled_rebalance_max_delay_ms=120_000)
    workers = [cluster.add(n) for n in ("w1", "w2", "w3")]
    wait_until("three workers to settle", lambda: settled(workers))
    victim = next(w for w in workers if not w.member.is_leader)
    victims_work = victim.current()
    victim.stop(leave=False)
    again = cluster.add(victim.url.split("//")[1].split(":")[0])  # same url, new member
    survivors = [w for w in workers if w is not victim] + [again]
    # Far shorter than the two-minute delay: the work comes back as soon as the old
    # member's session expires.
    wait_until("the restarted worker to get its work back", lambda: settled(survivors))
    assert again.current() == victims_work
    assert cluster.ledger.violations == []


def test_wakeup_ends_a_waiting_poll(tmp_path):
    with open_backend(f"embedded:{tmp_path / 'log'}") as backend:
        worker = Worker(backend, "http://w1:8083", Ledger(), WorkerGroupConfig())
        poller = threading.Thread(target=worker.member.poll, args=(120,), daemon=True)
        poller.start()
        worker.member.wakeup()
        poller.join(30)
        assert not poller.is_alive()


def test_config_rejects_bad_settings():
    with pytest.raises(ConfigError, match=r"heartbeat\.interval\.ms"):
        WorkerGroupConfig(session_timeout_ms=3000, heartbeat_interval_ms=3000)
    with pytest.raises(ConfigError, match="eager"):
        WorkerGroupConfig(protocol=ConnectProtocol.EAGER)
    assert WorkerGroupConfig().lost_timeout_ms == 6000
    assert WorkerGroupConfig(session_timeout_ms=6000, heartbeat_interval_ms=2000
                             ).lost_timeout_ms == 4000


@pytest.mark.slow
@pytest.mark.integration
def test_three_members_on_a_ferry_broker(broker):
    cluster = kafka_cluster(broker, scheduled_rebalance_max_delay_ms=0)
    try:
        workers = check_three_workers_form_one_group(cluster)
        check_leaving_worker_keeps_the_others_work(cluster, workers)
    finally:
        cluster.close()


@pytest.mark.slow
@pytest.mark.integration
def test_worker_cut_off_from_the_broker_stops_its_work(broker):
    cluster = kafka_cluster(broker)
    try:
        worker = cluster.add("w1")
        wait_until("the worker to run everything", lambda: settled([worker]))
        broker.kill()
        wait_until("the worker to stop its work", lambda: worker.lost == 1, timeout_s=15)
        assert worker.current().is_empty() and worker.member.assignment is None
        broker.start()
        wait_until("the worker to rejoin and run everything again",
                   lambda: settled([worker]), timeout_s=60)
    finally:
        cluster.close()

