"""Connector secrets on two distributed workers in this process (real ``DistributedWorker``s
on one ``embedded:`` log, spoken to over HTTP): both workers mask every secret in every
endpoint, a task on either worker receives the secrets (they travel in the config
topic), a ``${env:...}`` reference keeps its secret out of the config topic, and a
client that sends the masked config back through the follower keeps the secrets.

Also: rebalance chatter is DEBUG; each completed rebalance is one INFO line per worker."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import requests
from dist_herder_harness import LocalCluster, TickSource, call, running, task_props, wait_for

from connect.api import ConfigDef, ConfigType, Importance
from core.backends import OffsetSpec, TopicPartition, open_backend

HIDDEN = "[hidden]"
SECRETS = {
    "database.password": "s3cret-db-Pa55",
    "connection.password": "s3cret-conn-Pa55",
    "ssl.key.password": "s3cret-ssl-Pa55",
    "producer.override.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="app" password="s3cret-jaas-Pa55";',
    "vault.token": "s3cret-vault-T0ken",
}
ENV_VAR = "FERRY_TEST_DIST_SECRET"
ENV_SECRET = "s3cret-env-only-Pa55"


class VaultTickSource(TickSource):
    """TickSource with a ``PASSWORD``-typed key whose name says nothing of secrets."""

    def config(self) -> ConfigDef:
        return ConfigDef().define("vault.token", ConfigType.PASSWORD, default=None,
                                  importance=Importance.HIGH, documentation="A token.")


SOURCE = f"{__name__}:VaultTickSource"


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCluster]:
    monkeypatch.setenv(ENV_VAR, ENV_SECRET)
    c = LocalCluster(tmp_path, group="dist-secrets", **{"config.providers": "env"})
    try:
        yield c
    finally:
        c.close()


def _config(**extra: str) -> dict[str, str]:
    return {"connector.class": SOURCE, "topic": "vault-ticks", "tasks.max": "2",
            "errors.task.restart.enable": "false", "visible.setting": "shown",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            "env.password": f"${{env:{ENV_VAR}}}", **SECRETS, **extra}


def _masked(config: Mapping[str, Any], where: str) -> None:
    for key in SECRETS:
        assert config[key] == HIDDEN, (where, key, config[key])
    assert config["visible.setting"] == "shown", where
    assert config["env.password"] == f"${{env:{ENV_VAR}}}", where


def _config_topic(log_url: str) -> bytes:
    with open_backend(log_url) as log:
        tp = TopicPartition("connect-configs", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        out, at = b"", 0
        while at < end:
            records = log.fetch({tp: at}, max_wait_ms=100)[tp].records
            out += b"".join(r.value or b"" for r in records)
            at = records[-1].offset + 1 if records else end
        return out


def test_both_workers_mask_secrets_and_tasks_on_both_get_them(cluster, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="connect")
    first, second = cluster.add(), cluster.add()
    wait_for(cluster.settled, "both workers in one generation")
    code, created = call(second.url, "POST", "/connectors",
                         {"name": "vault", "config": _config()})
    assert code == 201, created
    _masked(created["config"], "POST")
    found = wait_for(lambda: running(first.url, "vault", 2), "vault and 2 tasks RUNNING")
    # With two workers the two tasks run on different workers (so both got the secrets
    # from the config topic).
    assert {t["worker_id"] for t in found["tasks"]} == {first.worker_id, second.worker_id}
    for task in (0, 1):
        got = task_props("vault", task)
        assert {k: got.get(k) for k in SECRETS} == SECRETS
        assert got["env.password"] == ENV_SECRET

    texts: list[str] = []
    for worker in (first, second):
        def get(path: str, worker: Any = worker) -> Any:
            response = requests.get(worker.url + path, timeout=30)
            assert response.status_code == 200, response.text
            texts.append(response.text)
            return response.json()

        _masked(get("/connectors/vault/config"), "GET config")
        _masked(get("/connectors/vault")["config"], "GET connector")
        _masked(get("/connectors?expand=info")["vault"]["info"]["config"], "expand=info")
        for task in get("/connectors/vault/tasks"):
            _masked(task["config"], "GET tasks")
        response = requests.put(worker.url + "/connector-plugins/VaultTickSource/config/"
                                "validate", json=_config(name="vault"), timeout=30)
        texts.append(response.text)
        values = {c["value"]["name"]: c["value"]["value"] for c in response.json()["configs"]}
        _masked(values, "validate")

    # The masked config sent back through the follower keeps every secret.
    masked = call(second.url, "GET", "/connectors/vault/config")[1]
    code, body = call(second.url, "PUT", "/connectors/vault/config",
                      {**masked, "visible.setting": "changed"})
    assert code == 200, body
    wait_for(lambda: all(task_props("vault", t).get("visible.setting") == "changed"
                         for t in (0, 1)), "both tasks restarted with the new config")
    for task in (0, 1):
        assert {k: task_props("vault", task).get(k) for k in SECRETS} == SECRETS

    everything = "\n".join([*texts, *(r.getMessage() for r in caplog.records)])
    for secret in [*SECRETS.values(), ENV_SECRET]:
        assert secret not in everything
    # What tasks need travels in the config topic; a config provider's secret does not.
    stored = _config_topic(cluster.log_url)
    assert SECRETS["database.password"].encode() in stored
    assert ENV_SECRET.encode() not in stored


def test_rebalances_log_one_info_line_each(cluster, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="connect.runtime.distributed")
    first = cluster.add()
    second = cluster.add()
    wait_for(cluster.settled, "both workers in one generation")
    second.stop()
    cluster.workers.remove(second)
    wait_for(cluster.settled, "the first worker alone in a new generation")
    rebalance_loggers = ("connect.runtime.distributed.membership",
                         "connect.runtime.distributed.assignor")
    infos = [r for r in caplog.records if r.name in rebalance_loggers
             and r.levelno >= logging.INFO and "left group" not in r.getMessage()]
    completed = [r for r in infos if "completed generation" in r.getMessage()]
    assert infos == completed, [r.getMessage() for r in infos]
    generations = {(r.getMessage().split()[1], r.getMessage().split()[4]) for r in completed}
    assert len(completed) == len(generations) >= 3, [r.getMessage() for r in completed]
    assert first.url in {w for w, _ in generations}
    # The detail is still there at DEBUG.
    assert any(r.levelno == logging.DEBUG for r in caplog.records
               if r.name in rebalance_loggers)
