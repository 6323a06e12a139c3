"""REST contract of ``/connectors/{name}/tasks`` and ``/connectors/{name}/offsets``."""

from __future__ import annotations

from rest_fake_herder import WORKER

SOURCE_OFFSET = {"partition": {"file": "a.txt"}, "offset": {"position": 42}}


def test_task_configs_status_and_restart(client, created, herder):
    tasks = client.get("/connectors/src/tasks").json
    assert [t["id"] for t in tasks] == [{"connector": "src", "task": 0},
                                        {"connector": "src", "task": 1}]
    assert tasks[0]["config"]["task.class"] == "T"
    herder.failed_tasks["src"] = {1}
    assert client.get("/connectors/src/tasks/1/status").json == {
        "id": 1, "state": "FAILED", "worker_id": WORKER,
        "trace": "RuntimeError: boom\n  at poll"}
    response = client.post("/connectors/src/tasks/1/restart")
    assert (response.status_code, response.data) == (204, b"")
    assert client.get("/connectors/src/tasks/1/status").json["state"] == "RUNNING"


def test_unknown_task_or_connector_is_404(client, created):
    assert client.get("/connectors/src/tasks/7/status").status_code == 404
    assert client.post("/connectors/src/tasks/7/restart").json["error_code"] == 404
    assert client.get("/connectors/nope/tasks").status_code == 404
    assert client.get("/connectors/src/tasks/abc/status").status_code == 404


def test_offsets_read_alter_reset(client, created, herder):
    assert client.get("/connectors/src/offsets").json == {"offsets": []}
    running = client.patch("/connectors/src/offsets", json={"offsets": [SOURCE_OFFSET]})
    assert running.status_code == 400
    assert "STOPPED" in running.json["message"]
    client.put("/connectors/src/stop")
    altered = client.patch("/connectors/src/offsets", json={"offsets": [SOURCE_OFFSET]})
    assert altered.status_code == 200
    assert altered.json == {
        "message": "The offsets for this connector have been altered successfully"}
    assert client.get("/connectors/src/offsets").json == {"offsets": [SOURCE_OFFSET]}
    reset = client.delete("/connectors/src/offsets")
    assert reset.status_code == 200
    assert reset.json == {"message": "The offsets for this connector have been reset "
                                     "successfully"}
    assert client.get("/connectors/src/offsets").json == {"offsets": []}


def test_alter_offsets_null_offset_is_passed_through(client, created, herder):
    client.put("/connectors/src/stop")
    response = client.patch("/connectors/src/offsets", json={
        "offsets": [{"partition": {"file": "a.txt"}, "offset": None}]})
    assert response.status_code == 200
    assert herder.offsets["src"] == []


def test_alter_offsets_rejects_bad_shapes(client, created):
    client.put("/connectors/src/stop")
    cases = {"empty": {"offsets": []}, "no key": {}, "not a list": {"offsets": {}},
             "no partition": {"offsets": [{"offset": {}}]},
             "scalar offset": {"offsets": [{"partition": {}, "offset": 5}]}}
    for label, body in cases.items():
        response = client.patch("/connectors/src/offsets", json=body)
        assert response.status_code == 400, label
    assert client.patch("/connectors/src/offsets", json={"offsets": []}).json["message"] \
        == "Partitions to modify cannot be empty"
    assert client.get("/connectors/nope/offsets").status_code == 404
