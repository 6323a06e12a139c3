"""Several registry instances on one log: one leader writes, followers forward, failover.

Each test starts a real ``ferry broker`` subprocess and ``ferry registry`` subprocesses on
``kafka://`` (so an instance can be SIGKILLed), each on a free port. Which instance leads
is read from the instances' own log lines ("is the registry leader" / "the registry leader
is"), waiting until every live instance agrees on the same generation.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 30.0
AGREE_TIMEOUT_S = 60.0
# Short group timeouts so a dead leader is replaced quickly; the broker must allow them.
REGISTRY_CONFIG = {
    "kafkagroup.session.timeout.ms": "3000",
    "kafkagroup.heartbeat.interval.ms": "500",
    "kafkagroup.rebalance.timeout.ms": "10000",
}
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "0",
                 "group.min.session.timeout.ms": "1000",
                 "offsets.topic.num.partitions": "4"}

_SELF = re.compile(r"this instance \((\S+)\) is the registry leader \(generation (\d+)\)")
_OTHER = re.compile(r"the registry leader is (\S+) \(generation (\d+)\)")


def _schema(name: str, *fields: str) -> str:
    body = ",".join(f'{{"name":"{f}","type":"string","default":""}}' for f in fields)
    return f'{{"type":"record","name":"{name}","fields":[{body}]}}'


class RegistryProcess:
    """``ferry registry`` on a free port, logging to a file."""

    def __init__(self, directory: Path, log_url: str, name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = directory / f"{name}.log"
        self.config_path = directory / f"{name}.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in REGISTRY_CONFIG.items()))
        self.log_url = log_url
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "core.cli", "registry", "--log", self.log_url,
                 "--listen", f"127.0.0.1:{self.port}", "--config", str(self.config_path)],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"registry exited:\n{self.output()}")
            try:
                if requests.get(self.url + "/subjects", timeout=2).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"registry not ready within {START_TIMEOUT_S} s:\n{self.output()}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def view(self) -> tuple[str, int] | None:
        """(leader URL, generation) from this instance's latest leadership log line."""
        found = None
        for line in self.output().splitlines():
            match = _SELF.search(line) or _OTHER.search(line)
            if match:
                found = (match.group(1), int(match.group(2)))
        return found

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "broker-data", BROKER_CONFIG, tmp_path / "broker.log")
    process.start()
    yield process
    process.stop()


@pytest.fixture
def registries(tmp_path: Path, broker: BrokerProcess
               ) -> Iterator[Callable[[int], list[RegistryProcess]]]:
    started: list[RegistryProcess] = []

    def make(count: int) -> list[RegistryProcess]:
        batch = [RegistryProcess(tmp_path, f"kafka://{broker.bootstrap}",
                                 f"registry-{len(started) + i}") for i in range(count)]
        for registry in batch:
            started.append(registry)
            registry.start()
        return batch

    yield make
    for registry in started:
        registry.stop()


def agreed_leader(instances: list[RegistryProcess]) -> RegistryProcess:
    """Wait until every live instance names the same leader in the same generation."""
    deadline = time.monotonic() + AGREE_TIMEOUT_S
    live = [r for r in instances if r.alive()]
    while time.monotonic() < deadline:
        views = {r.view() for r in live}
        if len(views) == 1 and None not in views:
            ((url, _),) = views
            leaders = [r for r in live if r.url == url]
            if leaders:
                return leaders[0]
        time.sleep(0.1)
    raise AssertionError("instances did not agree on a leader: "
                         + "; ".join(f"{r.url}: {r.view()}" for r in live))


def register(url: str, subject: str, schema: str) -> requests.Response:
    return requests.post(f"{url}/subjects/{subject}/versions", json={"schema": schema},
                         timeout=60)


def test_writes_through_a_follower_reach_the_leader_and_are_read_back(registries):
    instances = registries(2)
    leader = agreed_leader(instances)
    follower = next(r for r in instances if r is not leader)
    response = register(follower.url, "orders-value", _schema("Order", "a"))
    assert response.status_code == 200, response.text
    assert response.json()["id"] == 1
    # read-your-writes on the follower, right after its write
    latest = requests.get(f"{follower.url}/subjects/orders-value/versions/latest", timeout=30)
    assert latest.json()["id"] == 1
    assert requests.get(f"{leader.url}/schemas/ids/1", timeout=30).status_code == 200
    assert requests.put(f"{follower.url}/config/orders-value", json={"compatibility": "NONE"},
                        timeout=30).json() == {"compatibility": "NONE"}
    assert requests.get(f"{follower.url}/config/orders-value", timeout=30).json() == {
        "compatibilityLevel": "NONE"}
    # the leader's errors come back unchanged through the follower
    error = requests.delete(f"{follower.url}/subjects/nobody", timeout=30)
    assert (error.status_code, error.json()["error_code"]) == (404, 40401)
    assert requests.delete(f"{follower.url}/subjects/orders-value", timeout=30).json() == [1]
    assert requests.get(f"{follower.url}/subjects", timeout=30).json() == []
    assert requests.get(f"{leader.url}/subjects", timeout=30).json() == []


def test_concurrent_registrations_through_both_instances_never_duplicate_ids(registries):
    instances = registries(2)
    agreed_leader(instances)
    results: dict[tuple[str, str], int] = {}
    failures: list[str] = []
    lock = threading.Lock()

    def worker(worker_id: int) -> None:
        session = requests.Session()
        for i in range(8):
            # every schema is registered twice, through different instances
            schema = _schema(f"S{worker_id % 3}_{i}", f"f{worker_id % 3}")
            subject = f"w{worker_id}-{i}"
            url = instances[(worker_id + i) % 2].url
            response = session.post(f"{url}/subjects/{subject}/versions",
                                     json={"schema": schema}, timeout=60)
            with lock:
                if response.status_code == 200:
                    results[(subject, schema)] = response.json()["id"]
                else:
                    failures.append(f"{url} {subject}: {response.text}")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    assert len(results) == 48
    ids_by_schema: dict[str, set[int]] = {}
    for (_, schema), schema_id in results.items():
        ids_by_schema.setdefault(schema, set()).add(schema_id)
    assert all(len(ids) == 1 for ids in ids_by_schema.values()), ids_by_schema
    distinct_ids = [next(iter(ids)) for ids in ids_by_schema.values()]
    assert len(set(distinct_ids)) == len(ids_by_schema) == 24
    for instance in instances:  # both instances serve every id with its own schema
        for schema, ids in ids_by_schema.items():
            (schema_id,) = ids
            body = requests.get(f"{instance.url}/schemas/ids/{schema_id}", timeout=30).json()
            assert body["schema"] == schema


@pytest.mark.slow
def test_a_killed_leader_is_replaced(registries):
    instances = registries(2)
    leader = agreed_leader(instances)
    survivor = next(r for r in instances if r is not leader)
    assert register(leader.url, "a-value", _schema("A", "x")).json()["id"] == 1
    leader.kill()
    deadline = time.monotonic() + AGREE_TIMEOUT_S
    while True:
        response = register(survivor.url, "b-value", _schema("B", "y"))
        if response.status_code == 200:
            break
        assert response.status_code >= 500 and "error_code" in response.json()
        assert time.monotonic() < deadline, f"no takeover: {response.text}\n{survivor.output()}"
        time.sleep(0.2)
    assert response.json()["id"] == 2
    assert agreed_leader([survivor]) is survivor
    assert requests.get(f"{survivor.url}/schemas/ids/1", timeout=30).status_code == 200
    # a new instance joins the survivor's cluster and follows it (or leads, by URL order)
    newcomer = registries(1)[0]
    leader_now = agreed_leader([survivor, newcomer])
    assert leader_now in (survivor, newcomer)
    assert register(newcomer.url, "c-value", _schema("C", "z")).json()["id"] == 3


@pytest.mark.slow
def test_a_dead_broker_gives_json_errors_then_recovers(registries, broker):
    (instance,) = registries(1)
    agreed_leader([instance])
    assert register(instance.url, "a-value", _schema("A", "x")).json()["id"] == 1
    broker.kill()
    response = register(instance.url, "b-value", _schema("B", "y"))
    assert response.status_code >= 500
    assert isinstance(response.json()["error_code"], int)
    assert requests.get(f"{instance.url}/schemas/ids/1", timeout=60).status_code == 200
    broker.start()
    deadline = time.monotonic() + AGREE_TIMEOUT_S
    while register(instance.url, "b-value", _schema("B", "y")).status_code != 200:
        assert time.monotonic() < deadline, instance.output()[-3000:]
        time.sleep(0.5)
    assert requests.get(f"{instance.url}/subjects/b-value/versions/latest",
                        timeout=30).json()["id"] == 2
