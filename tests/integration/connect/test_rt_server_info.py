"""``GET /`` and ``/connector-plugins`` of a real standalone worker over HTTP.

``GET /`` reports the installed ``ferryman`` version and the cluster id of the log: a
``ferry broker`` subprocess's (as a Kafka client sees it) through ``kafka://``, and the
same id through ``embedded:`` on the directory that broker formatted.
``/connector-plugins`` lists the names configs take, and each listed name works where
configs use it and in ``/connector-plugins/{name}/config``."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
import requests
from broker_process import BrokerProcess
from confluent_kafka.admin import AdminClient

from connect.rest import RestServer, bind_listener, create_app
from connect.runtime.plugins import Plugins
from connect.runtime.standalone_herder import StandaloneHerder
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig
from core.backends import open_backend

pytestmark = pytest.mark.integration

WORKER_PROPS = {"offset.storage.partitions": "1", "key.converter": "StringConverter",
                "value.converter": "StringConverter"}


class Standalone:
    """A standalone worker with its REST server on ``log_url``; a context manager."""

    def __init__(self, log_url: str) -> None:
        self.backend = open_backend(log_url)
        sock = bind_listener("127.0.0.1", 0)
        self.herder = StandaloneHerder(
            Worker(self.backend, WorkerConfig.from_props(WORKER_PROPS), Plugins()),
            f"127.0.0.1:{sock.getsockname()[1]}")
        self.herder.start()
        self.server = RestServer(create_app(self.herder, WORKER_PROPS), sock=sock)
        self.server.start()

    def get(self, path: str, **params: str) -> Any:
        response = requests.get(self.server.url + path, params=params or None, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def __enter__(self) -> Standalone:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(5.0)
        self.herder.stop()
        self.backend.close()


def test_root_reports_the_package_version_and_the_logs_cluster_id(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "broker-data", {}, tmp_path / "broker.log")
    broker.start()
    try:
        seen_by_client = AdminClient({"bootstrap.servers": broker.bootstrap}
                                     ).list_topics(timeout=20).cluster_id
        with Standalone(f"kafka://{broker.bootstrap}") as worker:
            info = worker.get("/")
        assert info["version"] == importlib.metadata.version("ferryman")
        assert info["kafka_cluster_id"] == seen_by_client
        assert seen_by_client and "kafka://" not in seen_by_client
    finally:
        broker.stop()
    with Standalone(f"embedded:{tmp_path / 'broker-data'}") as worker:
        assert worker.get("/")["kafka_cluster_id"] == seen_by_client


def test_listed_plugins_are_the_names_configs_take(tmp_path: Path) -> None:
    with Standalone(f"embedded:{tmp_path / 'log'}") as worker:
        connectors = worker.get("/connector-plugins")
        assert {(p["class"], p["type"]) for p in connectors} >= {
            ("FileStreamSource", "source"), ("FileStreamSink", "sink"), ("datagen", "source")}
        assert all(isinstance(p["version"], str) for p in connectors)
        for plugin in connectors:
            assert "." not in plugin["class"], plugin  # no Python module paths
            infos = requests.put(
                f"{worker.server.url}/connector-plugins/{plugin['class']}/config/validate",
                json={"connector.class": plugin["class"]}, timeout=30).json()
            errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
            assert errors["connector.class"] == [], (plugin, errors["connector.class"])
        everything = worker.get("/connector-plugins", connectorsOnly="false")
        by_type: dict[str, list[str]] = {}
        for plugin in everything:
            by_type.setdefault(plugin["type"], []).append(plugin["class"])
            assert worker.get(f"/connector-plugins/{plugin['class']}/config") is not None
        assert "InsertField$Value" in by_type["transformation"]
        assert "TopicNameMatches" in by_type["predicate"]
        assert "JsonConverter" in by_type["converter"]
        assert "SimpleHeaderConverter" in by_type["header_converter"]
        # Each listed transformation and predicate works as transforms.X.type and
        # predicates.X.type: no "unknown type" error for them.
        for kind, key in (("transformation", "transforms"), ("predicate", "predicates")):
            for name in by_type[kind]:
                infos = requests.put(
                    f"{worker.server.url}/connector-plugins/datagen/config/validate",
                    json={"connector.class": "datagen", key: "x", f"{key}.x.type": name},
                    timeout=30).json()
                type_errors = [e for c in infos["configs"] if c["value"]["name"] ==
                               f"{key}.x.type" for e in c["value"]["errors"]]
                assert type_errors == [], (name, type_errors)
