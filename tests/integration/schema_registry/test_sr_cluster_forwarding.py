"""Leader election and write forwarding between instances in one process.

The instances share one ``embedded:`` log (and so one group coordinator), each serving
its REST API on a free port, as ``ferry up`` could host them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from broker_process import free_port

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

SCHEMA = '{"type":"record","name":"A","fields":[{"name":"f","type":"string"}]}'
WAIT_S = 30.0


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., RegistryService]]:
    started: list[RegistryService] = []

    def make(**config: str) -> RegistryService:
        service = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                                  config={"kafkagroup.heartbeat.interval.ms": "300",
                                          "kafkagroup.session.timeout.ms": "6000", **config})
        started.append(service)
        service.start(wait_ready=WAIT_S)
        return service

    yield make
    for service in started:
        service.stop()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def register(service: RegistryService, subject: str) -> requests.Response:
    return requests.post(f"{service.url}/subjects/{subject}/versions",
                         json={"schema": SCHEMA}, timeout=60)


def test_an_ineligible_instance_forwards_to_the_eligible_one(start):
    leader = start()
    follower = start(**{"leader.eligibility": "false"})
    wait_for(lambda: leader.is_leader and follower.elector.current is not None
             and follower.elector.current.leader_url == leader.identity.url,
             "the follower to know the leader")
    response = register(follower, "a-value")
    assert response.json()["id"] == 1
    assert requests.get(f"{follower.url}/subjects/a-value/versions",
                        timeout=30).json() == [1]
    assert not follower.is_leader


def test_no_eligible_instance_means_50004_for_writes_but_reads_work(start):
    lonely = start(**{"leader.eligibility": "false", "kafkastore.timeout.ms": "1000"})
    response = register(lonely, "a-value")
    assert response.status_code == 500
    assert response.json()["error_code"] == 50004
    assert "Leader not known" in response.json()["message"]
    assert requests.get(f"{lonely.url}/subjects", timeout=30).json() == []


def test_an_unreachable_leader_means_50003(start):
    dead_port = free_port()
    leader = start(**{"host.port": str(dead_port)})
    follower = start(**{"leader.eligibility": "false", "kafkastore.timeout.ms": "1000"})
    wait_for(lambda: follower.elector.current is not None
             and follower.elector.current.leader_url == f"http://127.0.0.1:{dead_port}",
             "the follower to know the leader")
    response = register(follower, "a-value")
    assert response.status_code == 500
    assert response.json()["error_code"] == 50003
    assert f"127.0.0.1:{dead_port}" in response.json()["message"]
    assert register(leader, "a-value").json()["id"] == 1


def test_a_stopped_leader_hands_over_at_once(start):
    first, second = start(), start()
    wait_for(lambda: first.is_leader != second.is_leader, "one leader")
    leader, other = (first, second) if first.is_leader else (second, first)
    assert register(other, "a-value").json()["id"] == 1
    leader.stop()
    wait_for(lambda: other.is_leader, "the other instance to lead")
    assert register(other, "b-value").json()["id"] == 1  # same schema, same id
    assert requests.get(f"{other.url}/subjects", timeout=30).json() == ["a-value", "b-value"]
