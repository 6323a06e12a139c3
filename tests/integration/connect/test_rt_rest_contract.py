"""The REST contract against the real thing: a ``StandaloneHerder`` over a real ``Worker``
on ``embedded:``, served by the real REST server on an ephemeral port, spoken to over
HTTP with ``requests``. Every endpoint of Kafka Connect's API (paths, methods, status
codes, JSON shapes) and every error, which is always ``{"error_code", "message"}``."""

from __future__ import annotations

import importlib.metadata
import logging
from pathlib import Path
from typing import Any

import pytest
import requests
from rt_test_connectors import Harness, wait_for

pytestmark = pytest.mark.integration

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
LOGGER = "ferry.test.rt_rest_contract"


@pytest.fixture
def rest(tmp_path):
    h = Harness(tmp_path / "log", **{"key.converter": "StringConverter",
                                     "value.converter": "StringConverter"})
    base = h.rest()
    yield h, base
    h.close()
    logging.getLogger(LOGGER).setLevel(logging.NOTSET)


def req(method: str, url: str, body: Any = None, raw: bytes | None = None,
        **params: str) -> requests.Response:
    if raw is not None:
        return requests.request(method, url, data=raw, params=params or None, timeout=30,
                                headers={"Content-Type": "application/json"})
    return requests.request(method, url, json=body, params=params or None, timeout=30)


def error(response: requests.Response, status: int) -> str:
    """Assert Kafka's error shape with ``status``; returns the message."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error_code", "message"}, body
    assert body["error_code"] == status
    assert isinstance(body["message"], str) and body["message"]
    return body["message"]


def ok(response: requests.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.text.strip() else None


def _status(base: str, name: str) -> dict[str, Any]:
    return ok(req("GET", f"{base}/connectors/{name}/status"))


def _states(base: str, name: str) -> tuple[str, list[str]]:
    s = _status(base, name)
    return s["connector"]["state"], [t["state"] for t in s["tasks"]]


# ---------------------------------------------------------------------- root and routing
def test_root_health_openapi_and_routing_errors(rest) -> None:
    _, base = rest
    info = ok(req("GET", base + "/"))
    assert set(info) >= {"version", "commit", "kafka_cluster_id"}
    # An embedded directory no broker formatted has no cluster id (test_rt_server_info
    # covers a broker's); the version is the installed package's.
    assert info["kafka_cluster_id"] is None
    assert info["version"] == importlib.metadata.version("ferryman")
    assert ok(req("GET", base + "/health")) == {
        "status": "healthy",
        "message": "Worker has completed startup and is ready to handle requests."}
    doc = ok(req("GET", base + "/openapi.json"))
    assert doc["openapi"].startswith("3.")
    for path in ("/connectors", "/connectors/{connector}/offsets",
                 "/connectors/{connector}/tasks/{task}/restart", "/admin/loggers/{logger}",
                 "/connector-plugins/{plugin}/config/validate", "/health"):
        assert path in doc["paths"], path

    assert "/no/such/path" in error(req("GET", base + "/no/such/path"), 404)
    response = req("DELETE", base + "/connectors")
    error(response, 405)
    assert set(response.headers["Allow"].split(", ")) >= {"GET", "POST"}
    error(req("POST", base + "/connectors/x/status"), 405)
    error(req("GET", base + "/connectors/x/tasks/notanumber/status"), 404)


# ---------------------------------------------------------------------- connectors
def test_connector_lifecycle(rest, tmp_path: Path) -> None:
    h, base = rest
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("one\ntwo\nthree\n")
    assert ok(req("GET", base + "/connectors")) == []

    config = {"connector.class": FILE_SOURCE, "tasks.max": 1, "topic": "lines",
              "file": str(source_file)}
    response = req("POST", base + "/connectors", {"name": "src", "config": config})
    created = ok(response, 201)
    assert response.headers["Location"].endswith("/connectors/src")
    expected_config = {**{k: str(v) for k, v in config.items()}, "name": "src"}
    assert created == {"name": "src", "config": expected_config,
                       "tasks": [{"connector": "src", "task": 0}], "type": "source"}
    assert "src already exists" in error(
        req("POST", base + "/connectors", {"name": "src", "config": config}), 409)
    assert ok(req("GET", base + "/connectors")) == ["src"]
    assert ok(req("GET", base + "/connectors/src")) == created
    assert ok(req("GET", base + "/connectors/src/config")) == expected_config
    wait_for(lambda: _states(base, "src") == ("RUNNING", ["RUNNING"]), "src RUNNING")
    assert _status(base, "src") == {
        "name": "src", "connector": {"state": "RUNNING", "worker_id": h.herder.worker_id},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": h.herder.worker_id}],
        "type": "source"}
    assert ok(req("GET", base + "/connectors/src/tasks")) == [
        {"id": {"connector": "src", "task": 0}, "config": expected_config}]
    assert ok(req("GET", base + "/connectors/src/tasks/0/status")) == {
        "id": 0, "state": "RUNNING", "worker_id": h.herder.worker_id}

    # PUT creates (201) then updates (200); PATCH merges, null deletes a key.
    sink = {"connector.class": "FileStreamSink", "topics": "lines", "file": str(sink_file)}
    response = req("PUT", base + "/connectors/sink/config", sink)
    assert ok(response, 201)["type"] == "sink"
    assert response.headers["Location"].endswith("/connectors/sink")
    wait_for(lambda: sink_file.exists() and sink_file.read_text() == "one\ntwo\nthree\n",
             "the round trip through the topic into the sink's file")
    updated = ok(req("PUT", base + "/connectors/sink/config", {**sink, "tasks.max": "2"}))
    assert updated["config"]["tasks.max"] == "2" and len(updated["tasks"]) == 2
    patched = ok(req("PATCH", base + "/connectors/sink/config",
                     {"tasks.max": None, "errors.tolerance": "all"}))
    assert "tasks.max" not in patched["config"]
    assert patched["config"]["errors.tolerance"] == "all"
    assert ok(req("GET", base + "/connectors/sink/config")) == patched["config"]

    expanded = ok(req("GET", base + "/connectors", expand="status"))
    assert set(expanded) == {"sink", "src"}
    assert set(expanded["src"]) == {"status"} and expanded["src"]["status"]["name"] == "src"
    assert ok(req("GET", base + "/connectors", expand="info"))["src"] == {"info": created}
    both = ok(req("GET", base + "/connectors?expand=status&expand=info"))
    assert set(both["sink"]) == {"status", "info"}

    # Active topics (KIP-558).
    wait_for(lambda: ok(req("GET", base + "/connectors/src/topics"))
             == {"src": {"topics": ["lines"]}}, "src's active topic")
    assert ok(req("GET", base + "/connectors/sink/topics")) == {"sink": {"topics": ["lines"]}}
    assert ok(req("PUT", base + "/connectors/src/topics/reset"), 202) is None
    assert ok(req("GET", base + "/connectors/src/topics")) == {"src": {"topics": []}}

    # Pause, resume, stop; resume also restarts a stopped connector.
    assert ok(req("PUT", base + "/connectors/src/pause"), 202) is None
    wait_for(lambda: _states(base, "src") == ("PAUSED", ["PAUSED"]), "src PAUSED")
    assert ok(req("PUT", base + "/connectors/src/resume"), 202) is None
    wait_for(lambda: _states(base, "src") == ("RUNNING", ["RUNNING"]), "src RUNNING")
    assert ok(req("PUT", base + "/connectors/src/stop"), 204) is None
    assert _states(base, "src") == ("STOPPED", [])
    assert ok(req("GET", base + "/connectors/src/tasks")) == []
    assert ok(req("GET", base + "/connectors/src"))["tasks"] == []
    assert ok(req("PUT", base + "/connectors/src/resume"), 202) is None
    wait_for(lambda: _states(base, "src") == ("RUNNING", ["RUNNING"]), "src RUNNING")

    # Restarts: 204 without flags, 202 with the status otherwise.
    assert ok(req("POST", base + "/connectors/src/restart"), 204) is None
    body = ok(req("POST", base + "/connectors/src/restart", includeTasks="true"), 202)
    assert body["connector"]["state"] == "RESTARTING"
    assert ok(req("POST", base + "/connectors/src/tasks/0/restart"), 204) is None

    # Offsets of a running connector can be read, not changed.
    wait_for(lambda: ok(req("GET", base + "/connectors/src/offsets"))["offsets"] == [
        {"partition": {"filename": str(source_file)}, "offset": {"position": 14}}],
        "src's offset")
    error(req("DELETE", base + "/connectors/src/offsets"), 400)
    error(req("PATCH", base + "/connectors/src/offsets", {"offsets": [
        {"partition": {"filename": str(source_file)}, "offset": {"position": 0}}]}), 400)
    error(req("PATCH", base + "/connectors/src/offsets", {"wrong": []}), 400)

    assert ok(req("DELETE", base + "/connectors/src"), 204) is None
    assert "src not found" in error(req("GET", base + "/connectors/src"), 404)
    error(req("DELETE", base + "/connectors/src"), 404)
    assert ok(req("GET", base + "/connectors")) == ["sink"]


def test_unknown_connector_and_task_are_404(rest) -> None:
    _, base = rest
    for method, path in (("GET", "/connectors/none"), ("GET", "/connectors/none/config"),
                         ("GET", "/connectors/none/status"), ("GET", "/connectors/none/tasks"),
                         ("GET", "/connectors/none/tasks/0/status"),
                         ("GET", "/connectors/none/offsets"),
                         ("GET", "/connectors/none/topics"),
                         ("PUT", "/connectors/none/topics/reset"),
                         ("PUT", "/connectors/none/pause"), ("PUT", "/connectors/none/resume"),
                         ("PUT", "/connectors/none/stop"), ("POST", "/connectors/none/restart"),
                         ("POST", "/connectors/none/tasks/0/restart"),
                         ("DELETE", "/connectors/none"), ("DELETE", "/connectors/none/offsets")):
        assert "none" in error(req(method, base + path), 404), (method, path)
    error(req("PATCH", base + "/connectors/none/config", {"tasks.max": "2"}), 404)
    error(req("PATCH", base + "/connectors/none/offsets", {"offsets": [
        {"partition": {"a": 1}, "offset": None}]}), 404)
    ok(req("POST", base + "/connectors", {"name": "one", "config": {
        "connector.class": "ScriptedSource"}}), 201)
    assert "one-3" in error(req("GET", base + "/connectors/one/tasks/3/status"), 404)
    error(req("POST", base + "/connectors/one/tasks/3/restart"), 404)


def test_invalid_requests_are_400_naming_each_bad_key(rest) -> None:
    _, base = rest
    message = error(req("POST", base + "/connectors", {"name": "bad", "config": {
        "connector.class": "FileStreamSource", "tasks.max": "0",
        "errors.tolerance": "sometimes", "errors.retry.timeout": "soon"}}), 400)
    assert message.startswith("Connector configuration is invalid and contains the "
                              "following 4 error(s):")
    for key in ("tasks.max", "errors.tolerance", "errors.retry.timeout", "topic"):
        assert key in message, (key, message)
    assert "/connector-plugins/" in message and "/config/validate" in message

    message = error(req("POST", base + "/connectors", {"name": "bad", "config": {
        "connector.class": "NoSuchConnector"}}), 400)
    assert "connector.class" in message and "NoSuchConnector" in message
    message = error(req("PUT", base + "/connectors/bad/config",
                        {"connector.class": "FileStreamSink"}), 400)
    assert "topics" in message  # a sink needs topics or topics.regex
    assert ok(req("GET", base + "/connectors")) == []  # nothing was created

    for body in ({"config": {"connector.class": "ScriptedSource"}},
                 {"name": "", "config": {"connector.class": "ScriptedSource"}},
                 {"name": "x", "config": {"connector.class": "ScriptedSource", "name": "y"}},
                 {"name": "x", "config": {"connector.class": "ScriptedSource",
                                          "nested": {"a": 1}}},
                 {"name": "x", "config": "not an object"},
                 {"name": "x", "config": {"connector.class": "ScriptedSource"},
                  "initial_state": "SLEEPING"},
                 ["not", "an", "object"]):
        error(req("POST", base + "/connectors", body), 400)
    error(req("POST", base + "/connectors", raw=b"{not json"), 400)
    error(req("POST", base + "/connectors", raw=b""), 400)
    error(req("PUT", base + "/connectors/x/config",
              {"connector.class": "ScriptedSource", "name": "y"}), 400)
    ok(req("POST", base + "/connectors", {"name": "x", "config": {
        "connector.class": "ScriptedSource"}}), 201)
    message = error(req("PATCH", base + "/connectors/x/config", {"tasks.max": "zero"}), 400)
    assert "tasks.max" in message
    error(req("PATCH", base + "/connectors/x/config", {"name": "other"}), 400)
    assert ok(req("GET", base + "/connectors/x/config")) == {
        "connector.class": "ScriptedSource", "name": "x"}
    error(req("POST", base + "/connectors/x/restart", includeTasks="yes"), 400)


def test_initial_state(rest) -> None:
    _, base = rest
    for name, initial, expected in (("p", "PAUSED", ("PAUSED", ["PAUSED"])),
                                    ("s", "STOPPED", ("STOPPED", [])),
                                    ("r", "RUNNING", ("RUNNING", ["RUNNING"]))):
        ok(req("POST", base + "/connectors", {"name": name, "initial_state": initial,
                                              "config": {"connector.class": "ScriptedSource"}}),
           201)
        wait_for(lambda n=name, e=expected: _states(base, n) == e, f"{name} {expected}")


# ---------------------------------------------------------------------- plugins
def test_connector_plugins_config_and_validate(rest) -> None:
    _, base = rest
    plugins = ok(req("GET", base + "/connector-plugins"))
    assert {p["type"] for p in plugins} == {"source", "sink"}
    by_class = {p["class"]: p for p in plugins}
    file_source = by_class["FileStreamSource"]  # the name connector.class takes
    assert file_source["type"] == "source" and isinstance(file_source["version"], str)
    assert ok(req("GET", base + "/connector-plugins", connectorsOnly="true")) == plugins
    everything = ok(req("GET", base + "/connector-plugins", connectorsOnly="false"))
    assert {p["type"] for p in everything} == {"source", "sink", "transformation",
                                               "predicate", "converter", "header_converter"}
    error(req("GET", base + "/connector-plugins", connectorsOnly="maybe"), 400)

    keys = ok(req("GET", base + "/connector-plugins/FileStreamSource/config"))
    assert {k["name"] for k in keys} == {"file", "topic", "batch.size"}
    topic = next(k for k in keys if k["name"] == "topic")
    assert topic["type"] == "STRING" and topic["required"] is True
    assert "schemas.enable" in {k["name"] for k in ok(
        req("GET", base + "/connector-plugins/JsonConverter/config"))}
    assert "pattern" in {k["name"] for k in ok(
        req("GET", base + "/connector-plugins/TopicNameMatches/config"))}
    assert "NoSuchPlugin" in error(req("GET", base + "/connector-plugins/NoSuchPlugin/config"),
                                   404)

    infos = ok(req("PUT", base + "/connector-plugins/FileStreamSource/config/validate",
                   {"connector.class": "FileStreamSource", "tasks.max": "0", "extra": "x"}))
    assert infos["error_count"] == 3  # with name missing, as Kafka reports it
    infos = ok(req("PUT", base + "/connector-plugins/FileStreamSource/config/validate",
                   {"connector.class": "FileStreamSource", "name": "v", "tasks.max": "0",
                    "extra": "x"}))
    assert infos["name"] == "FileStreamSourceConnector"
    assert infos["error_count"] == 2
    assert {"Common", "Error Handling"} <= set(infos["groups"])
    bad = {c["value"]["name"] for c in infos["configs"] if c["value"]["errors"]}
    assert bad == {"tasks.max", "topic"}
    extra = next(c for c in infos["configs"] if c["value"]["name"] == "extra")
    assert extra["definition"] is None
    clean = ok(req("PUT", base + "/connector-plugins/FileStreamSource/config/validate",
                   {"name": "v", "topic": "t"}))
    assert clean["error_count"] == 0
    error(req("PUT", base + "/connector-plugins/FileStreamSource/config/validate",
              {"connector.class": "FileStreamSink"}), 400)
    error(req("PUT", base + "/connector-plugins/FileStreamSource/config/validate",
              raw=b"[1"), 400)


# ---------------------------------------------------------------------- loggers
def test_admin_loggers(rest) -> None:
    _, base = rest
    logging.getLogger(LOGGER + ".child")
    assert "root" in ok(req("GET", base + "/admin/loggers"))
    affected = ok(req("PUT", f"{base}/admin/loggers/{LOGGER}", {"level": "DEBUG"}))
    assert affected == [LOGGER, LOGGER + ".child"]
    level = ok(req("GET", f"{base}/admin/loggers/{LOGGER}"))
    assert level["level"] == "DEBUG" and isinstance(level["last_modified"], int)
    assert ok(req("GET", f"{base}/admin/loggers"))[LOGGER]["level"] == "DEBUG"
    assert logging.getLogger(LOGGER + ".child").getEffectiveLevel() == logging.DEBUG
    assert ok(req("PUT", f"{base}/admin/loggers/{LOGGER}", {"level": "WARN"},
                  scope="cluster"), 204) is None
    assert ok(req("GET", f"{base}/admin/loggers/{LOGGER}"))["level"] == "WARN"
    error(req("PUT", f"{base}/admin/loggers/{LOGGER}", {"lvl": "INFO"}), 400)
    error(req("PUT", f"{base}/admin/loggers/{LOGGER}", {"level": "LOUD"}), 404)
    error(req("GET", f"{base}/admin/loggers/no.such.logger.anywhere"), 404)
