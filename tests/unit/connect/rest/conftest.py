"""Fixtures for the REST contract tests: a fake herder and a Flask test client over it."""

from __future__ import annotations

import pytest
from flask import Flask
from flask.testing import FlaskClient
from rest_fake_herder import SOURCE, FakeHerder

from connect.rest import create_app


@pytest.fixture
def herder() -> FakeHerder:
    return FakeHerder()


@pytest.fixture
def app(herder: FakeHerder) -> Flask:
    return create_app(herder, {})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def created(client: FlaskClient) -> str:
    """A running source connector ``src`` with two tasks."""
    response = client.post("/connectors", json={
        "name": "src", "config": {"connector.class": SOURCE, "tasks.max": "2"}})
    assert response.status_code == 201, response.json
    return "src"
