"""REST contract of ``/``, ``/health`` and the generic errors (404, 405, 400, 500)."""

from __future__ import annotations

import threading

from rest_fake_herder import FakeHerder

from connect.rest import RestConfig, create_app
from connect.rest.errors import invalid_config_message


def test_root_is_server_info(client):
    assert client.get("/").json == {"version": "0.1.0", "commit": "abc123",
                                    "kafka_cluster_id": "cluster-1"}


def test_health_status_codes(client, herder):
    assert client.get("/health").status_code == 200
    assert client.get("/health").json["status"] == "healthy"
    herder.health_status = ("starting", "Worker is still starting up.")
    response = client.get("/health")
    assert (response.status_code, response.json) == (
        503, {"status": "starting", "message": "Worker is still starting up."})
    herder.health_status = ("unhealthy", "broken")
    assert client.get("/health").status_code == 500


def test_health_is_unhealthy_when_the_herder_does_not_answer(herder):
    herder.health_gate = threading.Event()
    client = create_app(herder, RestConfig(health_timeout_s=0.05)).test_client()
    try:
        response = client.get("/health")
    finally:
        herder.health_gate.set()
    assert response.status_code == 500
    assert response.json["status"] == "unhealthy"


def test_unknown_route_is_404_json(client):
    response = client.get("/nope")
    assert response.status_code == 404
    assert response.json == {"error_code": 404,
                             "message": "HTTP 404 Not Found: no endpoint GET /nope"}


def test_wrong_method_is_405_json_with_allow(client):
    response = client.delete("/connectors")
    assert response.status_code == 405
    assert response.json["error_code"] == 405
    assert "GET" in response.headers["Allow"] and "POST" in response.headers["Allow"]


def test_malformed_or_missing_json_is_400(client):
    for data in (b"{not json", b"", b"\xff\xfe"):
        response = client.post("/connectors", data=data,
                               content_type="application/json")
        assert response.status_code == 400, data
        assert set(response.json) == {"error_code", "message"}
    malformed = client.put("/connectors/x/config", data=b"{", content_type="text/plain")
    assert malformed.json["message"].startswith("Malformed JSON in request body")


def test_body_parsed_whatever_the_content_type(client):
    response = client.put("/connectors/x/config",
                          data=b'{"connector.class": "org.example.LogSinkConnector", '
                               b'"tasks.max": "1"}',
                          content_type="application/x-www-form-urlencoded")
    assert response.status_code == 201


class _BrokenHerder(FakeHerder):
    def connectors(self) -> list[str]:
        raise RuntimeError("disk on fire")


def test_unexpected_exception_is_500_json_and_logged(caplog):
    client = create_app(_BrokenHerder(), {}).test_client()
    response = client.get("/connectors")
    assert response.status_code == 500
    assert response.json == {"error_code": 500, "message": "RuntimeError: disk on fire"}
    assert "Uncaught exception in REST call to GET /connectors" in caplog.text


def test_invalid_config_message_names_keys_once():
    message = invalid_config_message({"name": "P", "configs": [
        {"definition": None, "value": {"name": "a", "errors": ["bad thing"]}},
        {"definition": {"name": "b"},
         "value": {"name": "b", "errors": ['Missing required configuration "b"']}},
        {"definition": {"name": "c"}, "value": {"name": "c", "errors": []}}]})
    assert message.splitlines() == [
        "Connector configuration is invalid and contains the following 2 error(s):",
        "a: bad thing", 'Missing required configuration "b"',
        "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/P/config/validate`"]
