"""Hostile and oversized input over real HTTP, config validation, and bounded shutdown.

Most tests start a real ``RegistryService`` (waitress on a free port) over an ``embedded:``
log and talk to it with ``requests``; the shutdown test runs ``ferry registry`` as a
subprocess on a ``ferry broker`` subprocess that it freezes with SIGSTOP.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from broker_process import BrokerProcess, free_port

from core.backends import open_backend
from schema_registry.schemas import MAX_NESTING
from schema_registry.service import STOP_TIMEOUT_S, RegistryService

pytestmark = pytest.mark.integration

V1 = "application/vnd.schemaregistry.v1+json"
HEADERS = {"Content-Type": V1}


def start(log_dir: Path) -> RegistryService:
    service = RegistryService(f"embedded:{log_dir}", listen="127.0.0.1:0",
                              config={"kafkagroup.heartbeat.interval.ms": "500"})
    service.start(wait_ready=30)
    assert service.ready
    return service


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    service = start(tmp_path / "log")
    yield service.url
    service.stop()


def post(url: str, path: str, body: object = None, *, data: bytes | str | None = None
         ) -> requests.Response:
    payload = data if data is not None else json.dumps(body)
    return requests.post(url + path, data=payload, headers=HEADERS, timeout=60)


def error_of(response: requests.Response) -> tuple[int, int, str]:
    body = response.json()
    return response.status_code, body["error_code"], body["message"]


def nested_avro(levels: int) -> str:
    return '{"type":"array","items":' * levels + '"int"' + "}" * levels


def nested_json_schema(levels: int) -> str:
    return '{"type":"array","items":' * levels + '{"type":"integer"}' + "}" * levels


def wide_avro(fields: int) -> str:
    """Compact, as the registry stores it, so the stored record is larger than the body."""
    return json.dumps({"type": "record", "name": "Wide", "fields": [
        {"name": f"f{i}", "type": "string"} for i in range(fields)]}, separators=(",", ":"))


# ------------------------------------------------------------------------------ nesting


@pytest.mark.parametrize("depth", [500, 100_000])
def test_a_deeply_nested_body_is_400_not_a_recursion_error(url, depth):
    status, code, message = error_of(post(url, "/subjects/s/versions",
                                          data="[" * depth + "]" * depth))
    assert (status, code) == (400, 400)
    assert f"nested deeper than {MAX_NESTING} levels" in message
    status, code, _ = error_of(requests.put(url + "/config", headers=HEADERS, timeout=60,
                                            data='{"x":' + "[" * depth + "]" * depth + "}"))
    assert (status, code) == (400, 400)


@pytest.mark.parametrize(("schema_type", "make"), [("AVRO", nested_avro),
                                                   ("JSON", nested_json_schema)])
def test_a_deeply_nested_schema_is_42201_and_one_within_the_limit_works(url, schema_type,
                                                                        make):
    for depth in (500, 20_000):
        status, code, message = error_of(post(url, "/subjects/deep/versions", {
            "schema": make(depth), "schemaType": schema_type}))
        assert (status, code) == (422, 42201)
        assert message.startswith(f"Invalid schema of type {schema_type}, details: ")
        assert f"nested deeper than {MAX_NESTING} levels" in message
    # Just inside the limit: registered, looked up, checked for compatibility, normalized.
    inside = make(MAX_NESTING - 2)
    body = {"schema": inside, "schemaType": schema_type}
    registered = post(url, "/subjects/deep/versions", body)
    assert registered.status_code == 200, registered.text
    assert post(url, "/subjects/deep?normalize=true", body).json()["version"] == 1
    check = post(url, "/compatibility/subjects/deep/versions/latest?verbose=true", body)
    assert check.json()["is_compatible"] is True


# ------------------------------------------------------------------------------ size


def test_a_body_over_max_message_bytes_is_413_before_parsing(url):
    oversized = json.dumps({"schema": wide_avro(40_000)})
    assert len(oversized) > 1_048_588  # the _schemas topic's max.message.bytes (default)
    status, code, message = error_of(post(url, "/subjects/big/versions", data=oversized))
    assert (status, code) == (413, 413)
    assert "max.message.bytes" in message
    # Without a Content-Length (chunked), the body is cut off at the same size.
    chunks = (oversized[i:i + 65536].encode() for i in range(0, len(oversized), 65536))
    chunked = requests.post(url + "/subjects/big/versions", data=chunks, headers=HEADERS,
                            timeout=60)
    assert chunked.status_code == 413
    assert requests.get(url + "/subjects", timeout=30).json() == []


def test_a_large_but_legal_schema_is_registered_and_found(url):
    schema = wide_avro(15_000)
    body = {"schema": schema}
    assert 500_000 < len(json.dumps(body)) < 1_048_588
    registered = post(url, "/subjects/wide/versions", body)
    assert registered.status_code == 200, registered.text
    found = post(url, "/subjects/wide", body).json()
    assert (found["id"], found["version"]) == (registered.json()["id"], 1)
    assert len(json.loads(found["schema"])["fields"]) == 15_000


def test_a_schema_whose_record_exceeds_the_topic_limit_is_42209(tmp_path: Path):
    backend = open_backend(f"embedded:{tmp_path / 'log'}")
    try:
        backend.create_topic("_schemas", 1, {"cleanup.policy": "compact",
                                             "max.message.bytes": "20000"})
    finally:
        backend.close()
    service = start(tmp_path / "log")
    try:
        small = wide_avro(100)
        assert post(service.url, "/subjects/ok/versions", {"schema": small}).status_code == 200
        fields = 1
        while len(json.dumps({"schema": wide_avro(fields + 1)})) < 19_900:
            fields += 1
        body = json.dumps({"schema": wide_avro(fields)})
        assert len(body) < 20_000  # under the body limit: parsed, then too large to store
        status, code, message = error_of(post(service.url, "/subjects/big/versions",
                                              data=body))
        assert (status, code) == (422, 42209)
        assert message.startswith("Write failed because schema is too large")
        assert error_of(post(service.url, "/subjects/big/versions",
                             data=json.dumps({"schema": wide_avro(fields * 2)})))[:2] == \
            (413, 413)
        assert requests.get(service.url + "/subjects", timeout=30).json() == ["ok"]
    finally:
        service.stop()


# ------------------------------------------------------------------------------ config


def test_put_config_keeps_known_fields_and_drops_the_rest(url):
    answer = requests.put(url + "/config/s", headers=HEADERS, timeout=30, json={
        "compatibility": "full", "normalize": True, "unknownField": {"a": [1, 2]},
        "validateFields": None})
    assert answer.status_code == 200
    assert answer.json() == {"compatibility": "FULL", "normalize": True}
    stored = requests.get(url + "/config/s", timeout=30)
    assert json.loads(stored.text, parse_constant=_reject) == {
        "compatibilityLevel": "FULL", "normalize": True}
    # A later update of another field keeps the level.
    requests.put(url + "/config/s", headers=HEADERS, timeout=30,
                 json={"compatibilityGroup": "app.version"})
    assert requests.get(url + "/config/s", timeout=30).json() == {
        "compatibilityLevel": "FULL", "normalize": True, "compatibilityGroup": "app.version"}


@pytest.mark.parametrize("text", [
    '{"compatibility": "FULL", "x": NaN}',
    '{"compatibility": "FULL", "x": Infinity}',
    '{"compatibility": "FULL", "x": -Infinity}',
])
def test_non_finite_numbers_are_400_and_nothing_is_stored(url, text):
    response = requests.put(url + "/config", headers=HEADERS, timeout=30, data=text)
    assert error_of(response)[:2] == (400, 400)
    stored = requests.get(url + "/config", timeout=30)
    assert json.loads(stored.text, parse_constant=_reject) == {"compatibilityLevel": "BACKWARD"}


def test_a_known_config_field_of_the_wrong_type_is_422_naming_it(url):
    status, code, message = error_of(requests.put(url + "/config", headers=HEADERS,
                                                  timeout=30, json={"normalize": "yes"}))
    assert (status, code) == (422, 422)
    assert "'normalize' must be a boolean" in message


def _reject(name: str) -> object:
    raise AssertionError(f"the registry served {name}, which is not JSON")


# ------------------------------------------------------------------------------ shutdown


def test_sigterm_does_not_wait_for_a_request_stuck_on_the_log(tmp_path: Path):
    """A registration waits on a frozen broker for up to kafkastore.timeout.ms (60 s here);
    SIGTERM must still stop the registry within its bounded shutdown."""
    (tmp_path / "broker").mkdir()
    broker = BrokerProcess(tmp_path / "broker", {}, tmp_path / "broker.log")
    broker.start()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    config = tmp_path / "registry.properties"
    config.write_text("kafkastore.timeout.ms=60000\nkafkagroup.heartbeat.interval.ms=500\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "registry", "--log", f"kafka://{broker.bootstrap}",
         "--listen", f"127.0.0.1:{port}", "--config", str(config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    frozen = False
    outcome: list[object] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1].decode()
            try:
                if requests.get(url + "/subjects", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "ferry registry did not serve"
            time.sleep(0.1)
        os.kill(broker.proc.pid, signal.SIGSTOP)
        frozen = True

        def register() -> None:
            try:
                outcome.append(requests.post(url + "/subjects/s/versions", headers=HEADERS,
                                             json={"schema": '"string"'}, timeout=90))
            except requests.RequestException as exc:
                outcome.append(exc)

        stuck = threading.Thread(target=register, daemon=True)
        stuck.start()
        time.sleep(1.0)  # the request is now waiting on the frozen broker
        assert not outcome
        proc.send_signal(signal.SIGTERM)
        try:
            # Bounded: STOP_TIMEOUT_S plus a margin. Before the bound, stopping took the
            # request grace, then a leave and a fetch each waiting on the frozen broker
            # (15 s measured), and the leave could wait for kafkastore.timeout.ms.
            proc.wait(timeout=STOP_TIMEOUT_S + 5)
        except subprocess.TimeoutExpired:
            pytest.fail("ferry registry waited for the stuck request after SIGTERM")
        assert proc.returncode == 0, proc.communicate()[1].decode()
        stuck.join(30)
        assert outcome  # answered or cut off, but not left hanging
        if isinstance(outcome[0], requests.Response):
            assert outcome[0].status_code >= 500  # no success reported for an unwritten schema
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if frozen:
            os.kill(broker.proc.pid, signal.SIGCONT)
        broker.stop()
