"""The registry with Confluent's and Karapace's security settings, against Confluent's own
Python client: HTTPS (certificates made here), ``authentication.method=BASIC`` with the
users of a JAAS-named password file and ``authentication.roles``, per-subject permissions
from a Karapace authfile (a denied subject answers as if it did not exist), and writes
forwarded from an ineligible instance to the leader over HTTPS with the user's
credentials."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from certificates import CertAuthority
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from core.http.users import hash_password
from schema_registry.errors import RegistryConfigError
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

WAIT_S = 30.0
ORDERS = Schema(json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}]}), "AVRO")
SECRET = Schema(json.dumps({"type": "record", "name": "Salary", "fields": [
    {"name": "amount", "type": "double"}]}), "AVRO")


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[Callable[..., RegistryService], str]]:
    ca = CertAuthority(tmp_path / "pki")
    server = ca.issue("registry")
    passwords = tmp_path / "password-file"
    passwords.write_text("admin: admin-pw,admin\napp: app-pw,developer\n"
                         "reader: reader-pw,user\noutsider: out-pw,guest\n")
    jaas = tmp_path / "jaas.conf"
    jaas.write_text("SchemaRegistry {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule "
                    f'required\n  file="{passwords}"\n  debug="false";\n}};\n')
    authfile = tmp_path / "authfile.json"
    authfile.write_text(json.dumps({
        # A Karapace user with a hashed password, beside the JAAS users.
        "users": [{"username": "karapace-user", "algorithm": "sha256", "salt": "pepper",
                   "password_hash": hash_password("sha256", "pepper", "k-pw")}],
        "permissions": [
            {"username": "admin", "operation": "Write", "resource": ".*"},
            {"username": "app", "operation": "Write", "resource": "Subject:orders-.*"},
            {"username": "reader", "operation": "Read", "resource": "Subject:orders-.*"},
            {"username": "karapace-user", "operation": "Read", "resource": "Subject:.*"},
        ]}))
    props = {
        "listeners": "https://127.0.0.1:0",
        "ssl.keystore.location": str(server.key_and_cert),
        "ssl.truststore.location": str(ca.cert),
        "authentication.method": "BASIC",
        "authentication.realm": "SchemaRegistry",
        "authentication.roles": "admin,developer,user",
        "java.security.auth.login.config": str(jaas),
        "registry_authfile": str(authfile),
        "kafkagroup.heartbeat.interval.ms": "300",
        "kafkagroup.session.timeout.ms": "6000",
    }
    started: list[RegistryService] = []

    def start(**extra: str) -> RegistryService:
        service = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                                  config={**props, **extra})
        started.append(service)
        service.start(wait_ready=WAIT_S)
        return service

    try:
        yield start, str(ca.cert)
    finally:
        for service in started:
            service.stop()


def client(service: RegistryService, ca: str, user: str, password: str) -> SchemaRegistryClient:
    """Confluent's Python client with ``basic.auth.user.info`` (its USER_INFO source)."""
    return SchemaRegistryClient({"url": service.url, "ssl.ca.location": ca,
                                 "basic.auth.user.info": f"{user}:{password}"})


def code_of(call: Callable[[], Any]) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as info:
        call()
    return info.value.http_status_code, info.value.error_code


def test_basic_auth_roles_and_subject_permissions_with_confluents_client(secured) -> None:
    start, ca = secured
    leader = start()
    follower = start(**{"leader.eligibility": "false"})
    assert leader.url.startswith("https://")
    deadline = time.monotonic() + WAIT_S
    while not (leader.is_leader and follower.elector.current is not None
               and follower.elector.current.leader_url == leader.identity.url):
        assert time.monotonic() < deadline, "the follower never learned the leader"
        time.sleep(0.05)

    # 401 with the challenge; wrong passwords never pass; a role not allowed is 403.
    for auth in (None, ("admin", "nope"), ("ghost", "admin-pw")):
        answer = requests.get(follower.url + "/subjects", auth=auth, verify=ca, timeout=30)
        assert answer.status_code == 401
        assert answer.headers["WWW-Authenticate"] == 'Basic realm="SchemaRegistry"'
    assert requests.get(follower.url + "/subjects", auth=("outsider", "out-pw"), verify=ca,
                        timeout=30).status_code == 403

    # Writes through the follower reach the leader over HTTPS with the user's credentials.
    app = client(follower, ca, "app", "app-pw")
    admin = client(follower, ca, "admin", "admin-pw")
    orders_id = app.register_schema("orders-value", ORDERS)
    secret_id = admin.register_schema("salaries-value", SECRET)
    assert orders_id != secret_id
    assert requests.get(leader.url + "/subjects", auth=("admin", "admin-pw"), verify=ca,
                        timeout=30).json() == ["orders-value", "salaries-value"]
    # That answer is cached on the leader, for admin only: app's listing there is its own.
    assert requests.get(leader.url + "/subjects", auth=("app", "app-pw"), verify=ca,
                        timeout=30).json() == ["orders-value"]

    # The denied subject does not exist for app: filtered, 404 40401, 404 40403 by id.
    assert app.get_subjects() == ["orders-value"]
    assert code_of(lambda: app.get_latest_version("salaries-value")) == (404, 40401)
    assert code_of(lambda: app.register_schema("salaries-value", ORDERS)) == (404, 40401)
    fresh_app = client(leader, ca, "app", "app-pw")  # no cached schemas
    assert code_of(lambda: fresh_app.get_schema(secret_id)) == (404, 40403)
    assert json.loads(fresh_app.get_schema(orders_id).schema_str) == json.loads(
        ORDERS.schema_str)

    # Read-only users read but cannot write (403); the global config is admin's.
    reader = client(leader, ca, "reader", "reader-pw")
    assert reader.get_latest_version("orders-value").schema_id == orders_id
    assert code_of(lambda: reader.register_schema("orders-value", ORDERS)) == (403, 40301)
    assert code_of(lambda: reader.get_compatibility()) == (403, 40301)
    assert admin.set_compatibility(level="FULL")["compatibility"] == "FULL"

    # Credentials in the URL (basic.auth.credentials.source=URL, the client's default).
    host = leader.url.split("://", 1)[1]
    by_url = SchemaRegistryClient({"url": f"https://reader:reader-pw@{host}",
                                   "ssl.ca.location": ca})
    assert by_url.get_subjects() == ["orders-value"]
    # A Karapace authfile user with a hashed password.
    assert client(leader, ca, "karapace-user", "k-pw").get_subjects() == [
        "orders-value", "salaries-value"]

    # authentication.skip.paths (Confluent's key) leaves chosen paths open.
    assert requests.get(leader.url + "/schemas/types", verify=ca, timeout=30).status_code == 401
    open_paths = start(**{"authentication.skip.paths": "/schemas/types,/v1/metadata/id",
                          "leader.eligibility": "false"})
    assert requests.get(open_paths.url + "/schemas/types", verify=ca,
                        timeout=30).status_code == 200
    assert requests.get(open_paths.url + "/subjects", verify=ca, timeout=30).status_code == 401

    # Failures were counted, and the metrics endpoint itself needs a user.
    metrics = requests.get(follower.url + "/metrics", auth=("admin", "admin-pw"), verify=ca,
                           timeout=30).text
    assert 'ferry_http_authentication_failures_total{reason="invalid_credentials"}' in metrics


def test_security_settings_errors_name_the_key(tmp_path: Path) -> None:
    for props, key in (({"authentication.method": "BEARER"}, "authentication.method"),
                       ({"authentication.method": "BASIC"}, "java.security.auth.login.config"),
                       ({"registry_authfile": str(tmp_path / "missing.json")},
                        "registry_authfile"),
                       ({"ssl.client.authentication": "SOMETIMES"},
                        "ssl.client.authentication")):
        with pytest.raises(RegistryConfigError, match=key.replace(".", r"\.")):
            RegistryService("embedded:unused", config=props)
