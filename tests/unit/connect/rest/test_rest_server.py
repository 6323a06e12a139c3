"""``RestServer``: the app under waitress on a free port, stopped within its timeout."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from rest_fake_herder import SOURCE

from connect.rest import RestServer, create_app


def _request(url: str, method: str = "GET", body: object = None) -> tuple[int, dict, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, dict(response.headers), json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


@pytest.fixture
def server(herder):
    server = RestServer(create_app(herder, {}), host="127.0.0.1", port=0)
    server.start()
    yield server
    server.stop(timeout=5)


def test_real_server_round_trip(server):
    status, headers, body = _request(server.url + "/connectors", "POST", {
        "name": "a b", "config": {"connector.class": SOURCE, "tasks.max": "1"}})
    assert status == 201
    assert headers["Location"] == "/connectors/a%20b"
    assert _request(server.url + "/connectors/a%20b/status")[2]["connector"]["state"] \
        == "RUNNING"
    status, _, body = _request(server.url + "/connectors/nope")
    assert (status, body) == (404, {"error_code": 404, "message": "Connector nope not found"})


def test_stop_is_bounded_and_closes_the_port(herder):
    herder.health_gate = threading.Event()  # a request stuck in the herder
    server = RestServer(create_app(herder, {}), host="127.0.0.1", port=0)
    server.start()
    stuck = threading.Thread(target=_swallow, args=(server.url + "/health",), daemon=True)
    stuck.start()
    try:
        started = time.monotonic()
        server.stop(timeout=0.5)
        assert time.monotonic() - started < 3
    finally:
        herder.health_gate.set()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(server.url + "/", timeout=2)
    server.stop()  # a second stop is harmless


def _swallow(url: str) -> None:
    with contextlib.suppress(OSError):
        urllib.request.urlopen(url, timeout=10).read()
