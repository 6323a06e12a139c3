"""REST contract of ``/connector-plugins``, including Kafka's alias-aware validate check."""

from __future__ import annotations

import pytest
from rest_fake_herder import SINK, SOURCE

from connect.rest.plugins import plugin_matches


def test_list_plugins_connectors_only_by_default(client):
    assert client.get("/connector-plugins").json == [
        {"class": SOURCE, "type": "source", "version": "1.0"},
        {"class": SINK, "type": "sink", "version": "1.0"}]
    everything = client.get("/connector-plugins?connectorsOnly=FALSE").json
    assert everything[-1] == {"class": "RegexRouter", "type": "transformation"}
    assert client.get("/connector-plugins?connectorsOnly=maybe").status_code == 400


def test_plugin_config_and_unknown_plugin(client):
    assert client.get("/connector-plugins/LogSinkConnector/config").json[0]["name"] == "topic"
    response = client.get("/connector-plugins/Nope/config")
    assert response.json == {"error_code": 404, "message": "Unknown plugin Nope."}


def test_validate_answers_200_even_with_errors(client):
    response = client.put("/connector-plugins/DataGenSource/config/validate",
                          json={"connector.class": SOURCE, "tasks.max": "x"})
    assert response.status_code == 200
    assert response.json["error_count"] == 1
    assert response.json["name"] == SOURCE


def test_validate_fills_connector_class_from_the_url(client):
    response = client.put(f"/connector-plugins/{SINK}/config/validate",
                          json={"tasks.max": "1"})
    assert response.status_code == 200
    assert response.json["error_count"] == 0


def test_validate_class_mismatch_is_400(client):
    response = client.put("/connector-plugins/LogSink/config/validate",
                          json={"connector.class": SOURCE})
    assert response.status_code == 400
    assert response.json["message"] == (f"Included connector type {SOURCE} does not match "
                                        "request type LogSink")


@pytest.mark.parametrize(("connector_class", "plugin", "expected"), [
    ("org.x.FileStreamSinkConnector", "FileStreamSinkConnector", True),
    ("org.x.FileStreamSinkConnector", "FileStreamSink", True),
    ("FileStreamSink", "org.x.FileStreamSinkConnector", False),
    ("FileStreamSink", "FileStreamSinkConnector", True),
    ("org.x.FileStreamSinkConnector", "FileStreamSource", False),
    ("Connector", "Connector", True),
])
def test_plugin_matches_like_kafka(connector_class, plugin, expected):
    assert plugin_matches(connector_class, plugin) is expected
