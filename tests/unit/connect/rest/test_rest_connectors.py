"""REST contract of ``/connectors``: create, read, configure, control, delete, topics."""

from __future__ import annotations

from rest_fake_herder import SINK, SOURCE, WORKER

from connect.rest import RestConfig, create_app
from connect.runtime.herder import TargetState


def test_create_answers_201_with_location_and_connector_info(client, herder):
    response = client.post("/connectors", json={
        "name": "src", "config": {"connector.class": SOURCE, "tasks.max": 2}})
    assert response.status_code == 201
    assert response.headers["Location"] == "/connectors/src"
    assert response.json == {
        "name": "src",
        "config": {"connector.class": SOURCE, "tasks.max": "2", "name": "src"},
        "tasks": [{"connector": "src", "task": 0}, {"connector": "src", "task": 1}],
        "type": "source"}
    assert herder.calls[0] == ("put", ("src", {"connector.class": SOURCE, "tasks.max": "2",
                                               "name": "src"}, False, None))


def test_create_existing_is_409(client, created):
    response = client.post("/connectors", json={
        "name": created, "config": {"connector.class": SOURCE, "tasks.max": "1"}})
    assert response.status_code == 409
    assert response.json == {"error_code": 409, "message": "Connector src already exists"}


def test_create_invalid_config_is_400_naming_each_bad_key(client, herder):
    response = client.post("/connectors", json={
        "name": "bad", "config": {"connector.class": "nope.Missing", "tasks.max": "x"}})
    assert response.status_code == 400
    body = response.json
    assert body["error_code"] == 400
    message = body["message"]
    assert message.startswith("Connector configuration is invalid and contains the "
                              "following 2 error(s):\n")
    assert "connector.class: Class nope.Missing could not be found." in message
    assert "Invalid value x for configuration tasks.max" in message
    assert "/connector-plugins/nope.Missing/config/validate" in message
    assert herder.connectors() == []


def test_create_with_config_name_mismatch_is_400(client):
    response = client.post("/connectors", json={
        "name": "a", "config": {"name": "b", "connector.class": SOURCE, "tasks.max": "1"}})
    assert response.status_code == 400
    assert response.json["message"] == ("Connector name configuration (b) doesn't match "
                                        "connector name in the URL (a)")


def test_create_rejects_bad_bodies(client):
    for body in ([], {"config": {}}, {"name": "  ", "config": {}}, {"name": "a"},
                 {"name": "a", "config": {"k": {"nested": 1}}},
                 {"name": "a", "config": {"k": None}}):
        response = client.post("/connectors", json=body)
        assert response.status_code == 400, body
        assert set(response.json) == {"error_code", "message"}


def test_create_initial_state_maps_to_target_state(client, herder):
    for name, state, target in (("p", "paused", TargetState.PAUSED),
                                ("s", "STOPPED", TargetState.STOPPED),
                                ("r", "RUNNING", TargetState.STARTED)):
        response = client.post("/connectors", json={
            "name": name, "config": {"connector.class": SOURCE, "tasks.max": "1"},
            "initial_state": state})
        assert response.status_code == 201
        assert herder.targets[name] is target
    bad = client.post("/connectors", json={
        "name": "x", "config": {"connector.class": SOURCE, "tasks.max": "1"},
        "initial_state": "STARTED"})
    assert bad.status_code == 400
    assert "initial_state" in bad.json["message"]


def test_list_and_expand(client, created, herder):
    assert client.get("/connectors").json == ["src"]
    assert client.get("/connectors/").json == ["src"]
    status_only = client.get("/connectors?expand=status").json
    assert status_only == {"src": {"status": herder.connector_status("src").to_json()}}
    both = client.get("/connectors?expand=status&expand=info").json
    assert set(both["src"]) == {"status", "info"}
    assert both["src"]["info"]["type"] == "source"
    assert client.get("/connectors?expand=bogus").json == {"src": {}}


def test_get_connector_config_and_status(client, created):
    assert client.get("/connectors/src").json["tasks"][1] == {"connector": "src", "task": 1}
    assert client.get("/connectors/src/config").json == {
        "connector.class": SOURCE, "tasks.max": "2", "name": "src"}
    assert client.get("/connectors/src/status").json == {
        "name": "src", "connector": {"state": "RUNNING", "worker_id": WORKER},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": WORKER},
                  {"id": 1, "state": "RUNNING", "worker_id": WORKER}],
        "type": "source"}


def test_unknown_connector_is_404_everywhere(client):
    for method, path in (("get", "/connectors/nope"), ("get", "/connectors/nope/config"),
                         ("get", "/connectors/nope/status"), ("delete", "/connectors/nope"),
                         ("put", "/connectors/nope/pause"), ("put", "/connectors/nope/resume"),
                         ("put", "/connectors/nope/stop"), ("post", "/connectors/nope/restart"),
                         ("get", "/connectors/nope/topics"),
                         ("put", "/connectors/nope/topics/reset")):
        response = getattr(client, method)(path)
        assert response.status_code == 404, path
        assert response.json == {"error_code": 404, "message": "Connector nope not found"}


def test_put_config_creates_201_then_updates_200(client, herder):
    config = {"connector.class": SINK, "tasks.max": "1"}
    first = client.put("/connectors/snk/config", json=config)
    assert first.status_code == 201
    assert first.headers["Location"] == "/connectors/snk"
    assert first.json["type"] == "sink"
    second = client.put("/connectors/snk/config", json={**config, "tasks.max": "3"})
    assert second.status_code == 200
    assert "Location" not in second.headers
    assert len(second.json["tasks"]) == 3
    mismatch = client.put("/connectors/snk/config", json={**config, "name": "other"})
    assert mismatch.status_code == 400
    assert "doesn't match connector name in the URL (snk)" in mismatch.json["message"]


def test_patch_config_merges_and_null_deletes(client, created, herder):
    client.put("/connectors/src/config", json={"connector.class": SOURCE, "tasks.max": "2",
                                               "extra": "x"})
    response = client.patch("/connectors/src/config", json={"tasks.max": 1, "extra": None})
    assert response.status_code == 200
    assert response.json["config"] == {"connector.class": SOURCE, "tasks.max": "1",
                                       "name": "src"}
    assert client.patch("/connectors/nope/config", json={"a": "b"}).status_code == 404
    assert client.patch("/connectors/src/config", json={"name": "x"}).status_code == 400


def test_pause_resume_stop_and_delete(client, created, herder):
    response = client.put("/connectors/src/pause")
    assert (response.status_code, response.data) == (202, b"")
    assert herder.targets["src"] is TargetState.PAUSED
    assert client.put("/connectors/src/resume").status_code == 202
    assert herder.targets["src"] is TargetState.STARTED
    response = client.put("/connectors/src/stop")
    assert (response.status_code, response.data) == (204, b"")
    assert herder.targets["src"] is TargetState.STOPPED
    response = client.delete("/connectors/src")
    assert (response.status_code, response.data) == (204, b"")
    assert client.get("/connectors").json == []


def test_restart_flags_choose_204_or_202(client, created, herder):
    plain = client.post("/connectors/src/restart")
    assert (plain.status_code, plain.data) == (204, b"")
    herder.failed_tasks["src"] = {1}
    response = client.post("/connectors/src/restart?includeTasks=TRUE&onlyFailed=True")
    assert response.status_code == 202
    assert [t["state"] for t in response.json["tasks"]] == ["RUNNING", "RESTARTING"]
    assert response.json["connector"]["state"] == "RUNNING"
    assert herder.calls[-1] == ("restart", ("src", True, True))
    everything = client.post("/connectors/src/restart?includeTasks=true")
    assert everything.json["connector"]["state"] == "RESTARTING"
    bad = client.post("/connectors/src/restart?includeTasks=yes")
    assert bad.status_code == 400
    assert "includeTasks" in bad.json["message"]


def test_topics_and_reset(client, created, herder):
    herder.topics["src"] = ["t1", "t2"]
    assert client.get("/connectors/src/topics").json == {"src": {"topics": ["t1", "t2"]}}
    response = client.put("/connectors/src/topics/reset")
    assert response.status_code == 202
    assert client.get("/connectors/src/topics").json == {"src": {"topics": []}}


def test_topic_tracking_disabled_is_403(herder):
    herder.configs["c"] = {"connector.class": SOURCE, "tasks.max": "1"}
    herder.targets["c"] = TargetState.STARTED
    off = create_app(herder, {"topic.tracking.enable": "false"}).test_client()
    assert off.get("/connectors/c/topics").json == {"error_code": 403,
                                                     "message": "Topic tracking is disabled."}
    assert off.put("/connectors/c/topics/reset").status_code == 403
    no_reset = create_app(herder, RestConfig(topic_tracking_allow_reset=False)).test_client()
    assert no_reset.get("/connectors/c/topics").status_code == 200
    assert no_reset.put("/connectors/c/topics/reset").status_code == 403


def test_url_encoded_connector_names(client, herder):
    name = "my conn é"
    response = client.put("/connectors/my%20conn%20%C3%A9/config",
                          json={"connector.class": SOURCE, "tasks.max": "1"})
    assert response.status_code == 201
    assert response.headers["Location"] == "/connectors/my%20conn%20%C3%A9"
    assert herder.connectors() == [name]
    assert client.get("/connectors/my%20conn%20%C3%A9").json["name"] == name
