"""DEK Registry writes through a follower: forwarded to the leader, visible on both.

Two instances share one ``embedded:`` log (as in ``test_sr_cluster_forwarding``); the
follower is not eligible to lead, so every write it receives must reach the leader.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

WAIT_S = 30.0


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[RegistryService, RegistryService]]:
    config = {"kafkagroup.heartbeat.interval.ms": "300", "kafkagroup.session.timeout.ms": "6000"}
    leader = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                             config=config)
    follower = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                               config={**config, "leader.eligibility": "false"})
    try:
        leader.start(wait_ready=WAIT_S)
        follower.start(wait_ready=WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while not (leader.is_leader and follower.elector.current is not None and
                   follower.elector.current.leader_url == leader.identity.url):
            assert time.monotonic() < deadline, "the follower never learnt the leader"
            time.sleep(0.05)
        yield leader, follower
    finally:
        follower.stop()
        leader.stop()


def test_kek_and_dek_writes_through_a_follower_reach_the_leader(pair):
    leader, follower = pair
    api = f"{follower.url}/dek-registry/v1"
    kek = {"name": "k1", "kmsType": "local-kms", "kmsKeyId": "mykey"}
    assert requests.post(f"{api}/keks", json=kek, timeout=30).status_code == 200
    dek = requests.post(f"{api}/keks/k1/deks/orders-value",
                        json={"encryptedKeyMaterial": "AAAA"}, timeout=30)
    assert dek.status_code == 200 and dek.json()["version"] == 1
    # Read-your-writes on the follower, and the leader has them too.
    for service in (follower, leader):
        base = f"{service.url}/dek-registry/v1"
        assert requests.get(f"{base}/keks", timeout=30).json() == ["k1"]
        got = requests.get(f"{base}/keks/k1/deks/orders-value/versions/1", timeout=30).json()
        assert got["encryptedKeyMaterial"] == "AAAA"
    conflict = requests.post(f"{api}/keks", json={**kek, "kmsKeyId": "other"}, timeout=30)
    assert (conflict.status_code, conflict.json()["error_code"]) == (409, 40971)
    deleted = requests.delete(f"{api}/keks/k1/deks/orders-value", timeout=30)
    assert deleted.status_code == 204
    assert requests.get(f"{api}/keks/k1/deks", timeout=30).json() == []
    assert not follower.is_leader
