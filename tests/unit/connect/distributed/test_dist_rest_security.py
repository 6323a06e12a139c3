"""Two distributed workers with Kafka Connect's REST security on: HTTPS listeners
(certificates made here) and the basic-auth extension with its JAAS file. Users need the
right password on either worker; requests forwarded to the leader carry the user's
credentials over TLS; task configs a follower sends the leader pass the authentication
filter because the session key signs them (and only then); work rebalances when a worker
leaves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from broker_process import free_port
from certificates import CertAuthority
from dist_herder_harness import LocalCluster, source, wait_for

from connect.api.errors import ConfigError
from connect.cli import DistributedWorker
from connect.rest.security import BASIC_AUTH_EXTENSION, RestSecurity

USER = ("operator", "op-secret")


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[LocalCluster, dict[str, str], str]]:
    ca = CertAuthority(tmp_path / "pki")
    server = ca.issue("worker")
    users = tmp_path / "connect.password"
    users.write_text(f"{USER[0]}: {USER[1]}\nviewer: view-only\n")
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
                    f'PropertyFileLoginModule required\n  file="{users}";\n}};\n')
    props = {
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.location": str(server.key_and_cert),
        "ssl.truststore.location": str(ca.cert),
        "rest.extension.classes": BASIC_AUTH_EXTENSION,
        "java.security.auth.login.config": str(jaas),
        "scheduled.rebalance.max.delay.ms": "1000",
    }
    cluster = LocalCluster(tmp_path, group="secured", **props)
    try:
        yield cluster, props, str(ca.cert)
    finally:
        cluster.close()


def add(cluster: LocalCluster, ca: str) -> DistributedWorker:
    worker = DistributedWorker(cluster.log_url, cluster.props, group_id=cluster.group,
                               rest_listener=f"127.0.0.1:{free_port()}")
    cluster.workers.append(worker)
    worker.start()
    assert worker.url.startswith("https://") and worker.advertised_url.startswith("https://")
    wait_for(lambda: api(worker, "GET", "/health", ca)[0] == 200, "a healthy worker")
    return worker


def api(worker: DistributedWorker, method: str, path: str, ca: str, body: Any = None,
        auth: tuple[str, str] | None = USER) -> tuple[int, Any]:
    response = requests.request(method, worker.url + path, json=body, auth=auth, verify=ca,
                                timeout=30)
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, None


def test_secured_workers_authenticate_forward_and_rebalance(secured) -> None:
    cluster, _, ca = secured
    first, second = add(cluster, ca), add(cluster, ca)
    wait_for(cluster.settled, "both workers in one generation")
    leader = cluster.leader()
    follower = second if leader is first else first

    # No credentials, a wrong password, an unknown user: 401 with a challenge, never 200.
    for auth in (None, (USER[0], "wrong"), ("nobody", USER[1])):
        response = requests.get(follower.url + "/connectors", auth=auth, verify=ca, timeout=30)
        assert response.status_code == 401, auth
        assert response.headers["WWW-Authenticate"] == 'Basic realm="KafkaConnect"'
    # Plain HTTP on the HTTPS port is refused.
    with pytest.raises(requests.ConnectionError):
        requests.get(follower.url.replace("https", "http") + "/connectors", timeout=5)

    # Writes through the follower are forwarded to the leader with the user's credentials.
    for n in range(4):
        code, body = api(follower, "POST", "/connectors", ca,
                         {"name": f"s{n}", "config": source(tasks=1)})
        assert code == 201, body

    def all_running(worker: DistributedWorker, names: range) -> list[dict[str, Any]] | None:
        found = []
        for n in names:
            code, status = api(worker, "GET", f"/connectors/s{n}/status", ca)
            if code != 200 or len(status["tasks"]) != 1 or {
                    status["connector"]["state"], status["tasks"][0]["state"]} != {"RUNNING"}:
                return None
            found.append(status)
        return found

    statuses = wait_for(lambda: all_running(leader, range(4)), "four connectors RUNNING")
    # Connector instances on the follower sent their task configs to the leader, signed:
    # they passed the authentication filter without a user.
    assert any(s["connector"]["worker_id"] == follower.worker_id for s in statuses)
    assert leader.herder.rebalances_completed >= 1

    # The internal endpoint is no open door: unsigned, it needs a user; with a forged
    # signature the herder refuses it.
    code, _ = api(leader, "POST", "/connectors/s0/tasks", ca, [{"task.class": "x"}],
                  auth=None)
    assert code == 401
    forged = requests.post(leader.url + "/connectors/s0/tasks", json=[{"task.class": "x"}],
                           verify=ca, timeout=30, headers={
                               "X-Connect-Authorization": "Zm9yZ2Vk",
                               "X-Connect-Request-Signature-Algorithm": "HmacSHA256"})
    assert forged.status_code == 403

    # The failures were counted.
    response = requests.get(leader.url + "/metrics", auth=USER, verify=ca, timeout=30)
    assert response.status_code == 200
    assert "ferry_http_authentication_failures_total" in response.text
    assert requests.get(leader.url + "/metrics", verify=ca, timeout=30).status_code == 401

    # The follower leaves: after the delay the leader takes every task over.
    follower.stop()
    wait_for(lambda: (found := all_running(leader, range(4))) and all(
        s["connector"]["worker_id"] == leader.worker_id for s in found),
        "all work on the survivor")


def test_security_settings_name_the_bad_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        RestSecurity.from_worker_config({"rest.extension.classes": "com.example.Other"})
    assert info.value.name == "rest.extension.classes"
    with pytest.raises(ConfigError) as info:
        RestSecurity.from_worker_config({"rest.extension.classes": BASIC_AUTH_EXTENSION},
                                        environ={})
    assert info.value.name == "rest.extension.classes"
    with pytest.raises(ConfigError) as info:
        RestSecurity.from_worker_config({"rest.extension.classes": BASIC_AUTH_EXTENSION,
                                         "java.security.auth.login.config": str(tmp_path)})
    assert info.value.name == "java.security.auth.login.config"
    with pytest.raises(ConfigError) as info:
        RestSecurity.from_worker_config({"listeners": "https://127.0.0.1:0"}).server_context()
    assert info.value.name.endswith("ssl.keystore.location")
    # The JAAS file may come from KAFKA_OPTS, as it does for Kafka's worker.
    users = tmp_path / "users"
    users.write_text("a=b\n")
    jaas = tmp_path / "jaas"
    jaas.write_text(f'KafkaConnect {{ x.PropertyFileLoginModule required file="{users}"; }};')
    security = RestSecurity.from_worker_config(
        {"rest.extension.classes": BASIC_AUTH_EXTENSION},
        environ={"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={jaas}"})
    assert security.users is not None and security.users.authenticate("a", "b")
