"""Connector secrets over the REST API of a real standalone worker (``StandaloneHerder``
over a real ``Worker`` on ``embedded:``, the real REST server, ``requests``): every
endpoint that shows a config shows each secret as ``[hidden]``, no response and no log
line holds a secret, and the task still receives every secret in clear, also after a
client sends the masked config back."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest
import requests
from rt_test_connectors import REC, Harness, ScriptedSource, ScriptedSourceTask, wait_for

from connect.api import ConfigDef, ConfigType, Importance

pytestmark = pytest.mark.integration

HIDDEN = "[hidden]"
#: Secret values, each under a key of another kind: a name ending in ``password``, a JAAS
#: config, a key the connector types PASSWORD under a neutral name, and a registry's
#: ``user:password`` on a converter.
SECRETS = {
    "database.password": "s3cret-db-Pa55",
    "connection.password": "s3cret-conn-Pa55",
    "ssl.key.password": "s3cret-ssl-Pa55",
    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                        'username="app" password="s3cret-jaas-Pa55";',
    "vault.token": "s3cret-vault-T0ken",
    "value.converter.basic.auth.user.info": "app:s3cret-registry-Pa55",
}
ENV_SECRET = "s3cret-from-env-Pa55"
ENV_VAR = "FERRY_TEST_SECRETS_DB_PASSWORD"


class VaultSource(ScriptedSource):
    """ScriptedSource with a ``PASSWORD``-typed key whose name says nothing of secrets."""

    def config(self) -> ConfigDef:
        return super().config().define("vault.token", ConfigType.PASSWORD, default=None,
                                       importance=Importance.HIGH,
                                       documentation="A token, typed PASSWORD.")


class LeakySourceTask(ScriptedSourceTask):
    """Fails on start the way client libraries do: quoting a connection URL."""

    def start(self, props: Mapping[str, str]) -> None:
        raise ConnectionError(f"cannot connect to postgresql://app:"
                              f"{props['database.password']}@db:5432/orders "
                              f"(env secret {props['env.password']})")


class LeakySource(VaultSource):
    """Its connector fails the same way when ``fail.connector`` is set."""

    def start(self, props: Mapping[str, str]) -> None:
        if props.get("fail.connector") == "true":
            raise ConnectionError(f"login with {props['vault.token']} refused")
        super().start(props)

    def task_class(self) -> type:
        return LeakySourceTask


@pytest.fixture
def rest(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG, logger="connect")
    monkeypatch.setenv(ENV_VAR, ENV_SECRET)
    h = Harness(tmp_path / "log", **{"config.providers": "env"})
    h.herder.worker.plugins.register_connector(VaultSource)
    h.herder.worker.plugins.register_connector(LeakySource)
    base = h.rest()
    yield h, base
    h.close()


def _config(**extra: str) -> dict[str, str]:
    return {"connector.class": "VaultSource", "topic": "secrets-out", "tasks.max": "2",
            "count": "1", "visible.setting": "shown", **SECRETS,
            "env.password": f"${{env:{ENV_VAR}}}", **extra}


def _no_secret_in(text: str, where: str) -> None:
    for secret in [*SECRETS.values(), ENV_SECRET, "s3cret"]:
        assert secret not in text, f"{where} shows a secret: {text}"


def _masked(config: Mapping[str, Any], where: str) -> None:
    for key in SECRETS:
        assert config[key] == HIDDEN, (where, key, config[key])
    assert config["visible.setting"] == "shown"
    assert config["env.password"] == f"${{env:{ENV_VAR}}}"  # a reference, shown as written


def _task_got(name: str, expected: Mapping[str, str]) -> bool:
    with REC.lock:
        props = [REC.task_props.get((name, i)) for i in range(2)]
    return all(p is not None and all(p.get(k) == v for k, v in expected.items())
               for p in props)


def test_every_endpoint_masks_secrets_and_tasks_get_them(rest, caplog) -> None:
    _, base = rest
    responses: list[requests.Response] = []

    def call(method: str, path: str, body: Any = None, status: int = 200) -> Any:
        response = requests.request(method, base + path, json=body, timeout=30)
        assert response.status_code == status, response.text
        responses.append(response)
        return response.json() if response.text.strip() else None

    created = call("POST", "/connectors", {"name": "vault", "config": _config()}, 201)
    _masked(created["config"], "POST /connectors")
    wait_for(lambda: _task_got("vault", {**SECRETS, "env.password": ENV_SECRET}),
             "both tasks to start with every secret in clear")

    _masked(call("GET", "/connectors/vault/config"), "GET config")
    _masked(call("GET", "/connectors/vault")["config"], "GET connector")
    _masked(call("GET", "/connectors?expand=info")["vault"]["info"]["config"], "expand=info")
    both = call("GET", "/connectors?expand=info&expand=status")["vault"]
    _masked(both["info"]["config"], "expand=info&status")
    tasks = call("GET", "/connectors/vault/tasks")
    assert len(tasks) == 2
    for task in tasks:
        _masked(task["config"], "GET tasks")
    infos = call("PUT", "/connector-plugins/VaultSource/config/validate",
                 {"name": "vault", **_config()})
    assert infos["error_count"] == 0, infos
    values = {c["value"]["name"]: c["value"]["value"] for c in infos["configs"]}
    _masked(values, "validate")

    # A client that read the masked config and sends it back keeps the secrets.
    masked = call("GET", "/connectors/vault/config")
    REC.task_props.clear()
    updated = call("PUT", "/connectors/vault/config", {**masked, "visible.setting": "new"})
    _masked({**updated["config"], "visible.setting": "shown"}, "PUT config")
    wait_for(lambda: _task_got("vault", {**SECRETS, "visible.setting": "new"}),
             "the restarted tasks to get the stored secrets, not [hidden]")
    REC.task_props.clear()
    patched = call("PATCH", "/connectors/vault/config",
                   {"database.password": "s3cret-rotated", "ssl.key.password": HIDDEN})
    assert patched["config"]["database.password"] == HIDDEN
    wait_for(lambda: _task_got("vault", {"database.password": "s3cret-rotated",
                                         "ssl.key.password": SECRETS["ssl.key.password"]}),
             "the tasks to get the rotated password and keep the other")

    for response in responses:
        _no_secret_in(response.text, f"{response.request.method} {response.url}")
    _no_secret_in("\n".join(r.getMessage() for r in caplog.records), "the log")


def test_validation_errors_never_repeat_a_secret(rest) -> None:
    _, base = rest
    response = requests.put(base + "/connector-plugins/VaultSource/config/validate",
                            json={"name": "bad", **_config(**{"tasks.max": "zero"})},
                            timeout=30)
    assert response.status_code == 200 and response.json()["error_count"] == 1
    _no_secret_in(response.text, "validate with an error")
    response = requests.post(base + "/connectors", timeout=30, json={
        "name": "bad", "config": _config(**{"tasks.max": "zero"})})
    assert response.status_code == 400
    _no_secret_in(response.text, "a rejected create")


def test_failure_traces_never_show_a_secret(rest, caplog) -> None:
    """A task and a connector whose errors quote secrets (one resolved from ``${env:...}``):
    the status traces and the log show ``[hidden]`` in their place."""
    _, base = rest
    config = {**_config(), "connector.class": "LeakySource",
              "errors.task.restart.backoff.initial.ms": "20",
              "errors.task.restart.backoff.max.ms": "40"}
    assert requests.post(base + "/connectors", json={"name": "leaky", "config": config},
                         timeout=30).status_code == 201

    def failed_tasks() -> list[dict[str, Any]]:
        tasks = requests.get(base + "/connectors/leaky/status", timeout=30).json()["tasks"]
        return [t for t in tasks if t["state"] == "FAILED"] if len(tasks) == 2 else []

    tasks = wait_for(lambda: len(failed_tasks()) == 2 and failed_tasks(), "2 FAILED tasks")
    for task in tasks:
        assert "postgresql://app:[hidden]@db:5432/orders" in task["trace"]
        assert "(env secret [hidden])" in task["trace"]
    broken = {**config, "fail.connector": "true"}
    assert requests.put(base + "/connectors/leaky/config", json=broken,
                        timeout=30).status_code == 200
    status = wait_for(lambda: (s := requests.get(base + "/connectors/leaky/status",
                                                 timeout=30).json())
                      ["connector"]["state"] == "FAILED" and s, "the connector FAILED")
    assert "login with [hidden] refused" in status["connector"]["trace"]
    texts = [requests.get(base + "/connectors/leaky/status", timeout=30).text,
             *(r.getMessage() for r in caplog.records),
             *(logging.Formatter().format(r) for r in caplog.records)]
    assert any("[hidden]" in t for t in texts[1:])  # the failures were logged, scrubbed
    _no_secret_in("\n".join(texts), "status and log")
