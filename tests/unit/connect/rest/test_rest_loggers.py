"""``/admin/loggers``: Kafka level names over Python logging; ``admin.listeners`` off."""

from __future__ import annotations

import logging
import uuid

import pytest

from connect.rest import create_app
from connect.rest.logger_levels import level_name, parse_level


@pytest.fixture
def namespace():
    """A fresh logger namespace with one child, levels reset afterwards."""
    name = f"ferrytest{uuid.uuid4().hex[:8]}"
    parent, child = logging.getLogger(name), logging.getLogger(f"{name}.child")
    yield name
    parent.setLevel(logging.NOTSET)
    child.setLevel(logging.NOTSET)


def test_set_level_affects_namespace_and_children(client, namespace):
    response = client.put(f"/admin/loggers/{namespace}", json={"level": "debug"})
    assert response.status_code == 200
    assert response.json == [namespace, f"{namespace}.child"]
    assert logging.getLogger(f"{namespace}.child").level == logging.DEBUG
    one = client.get(f"/admin/loggers/{namespace}.child").json
    assert one["level"] == "DEBUG"
    assert isinstance(one["last_modified"], int)
    listed = client.get("/admin/loggers").json
    assert listed[namespace]["level"] == "DEBUG"
    assert "root" in listed


def test_cluster_scope_is_204_and_unknown_scope_falls_back(client, namespace):
    response = client.put(f"/admin/loggers/{namespace}?scope=cluster", json={"level": "WARN"})
    assert (response.status_code, response.data) == (204, b"")
    assert logging.getLogger(namespace).level == logging.WARNING
    fallback = client.put(f"/admin/loggers/{namespace}?scope=galaxy", json={"level": "TRACE"})
    assert fallback.status_code == 200
    assert client.get(f"/admin/loggers/{namespace}").json["level"] == "TRACE"


def test_logger_errors(client, namespace):
    assert client.get("/admin/loggers/never.created.logger.xyz").json == {
        "error_code": 404, "message": "Logger never.created.logger.xyz not found."}
    assert client.put(f"/admin/loggers/{namespace}", json={}).status_code == 400
    bad = client.put(f"/admin/loggers/{namespace}", json={"level": "LOUD"})
    assert bad.status_code == 404
    assert "Invalid log level 'LOUD'" in bad.json["message"]


@pytest.mark.parametrize(("text", "level", "name"), [
    ("TRACE", 5, "TRACE"), ("debug", 10, "DEBUG"), ("Info", 20, "INFO"),
    ("WARN", 30, "WARN"), ("warning", 30, "WARN"), ("ERROR", 40, "ERROR"),
    ("FATAL", 50, "FATAL"), ("critical", 50, "FATAL"), ("OFF", 100, "OFF"),
])
def test_level_mapping(text, level, name):
    assert parse_level(text) == level
    assert level_name(level) == name


def test_level_name_of_in_between_levels():
    assert level_name(25) == "INFO"
    assert level_name(0) == "TRACE"


def test_empty_admin_listeners_turns_admin_off(herder):
    client = create_app(herder, {"admin.listeners": ""}).test_client()
    assert client.get("/admin/loggers").status_code == 404
    assert client.get("/connectors").status_code == 200
