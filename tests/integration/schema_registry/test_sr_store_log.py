"""The registry's state lives in ``_schemas``: restarts, Confluent-written topics, bad topics,
and an unreachable log.

Services run in-process over ``embedded:`` logs in temporary directories; the topic is
read and written directly with the LogBackend to check the bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from broker_process import free_port

from core.backends import OffsetSpec, ProducerRecord, TopicPartition, open_backend
from schema_registry.errors import RegistryConfigError
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

# Compact, in Avro's attribute order: the form the registry stores and serves back.
A = '{"type":"record","name":"A","fields":[{"name":"f","type":"string"}]}'
B = '{"type":"record","name":"B","fields":[{"name":"g","type":"long"}]}'
C = '{"type":"record","name":"C","fields":[{"name":"h","type":"int"}]}'
FAST = {"kafkagroup.heartbeat.interval.ms": "500"}


def _start(url: str, **config: str) -> RegistryService:
    service = RegistryService(url, listen="127.0.0.1:0", config={**FAST, **config})
    service.start(wait_ready=30)
    assert service.ready, service.store.problem if service.store else "not started"
    return service


def _register(service: RegistryService, subject: str, schema: str, **extra: object) -> int:
    response = requests.post(f"{service.url}/subjects/{subject}/versions",
                             json={"schema": schema, **extra}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["id"]


def _read_topic(url: str, topic: str = "_schemas") -> list[tuple[bytes, bytes | None]]:
    with open_backend(url) as backend:
        tp = TopicPartition(topic, 0)
        end = backend.list_offsets([tp], OffsetSpec.LATEST)[tp]
        records, position = [], 0
        while position < end:
            result = backend.fetch({tp: position})[tp]
            records += [(r.key, r.value) for r in result.records]
            position = result.next_offset
        return records


def test_restart_keeps_ids_and_never_reuses_a_deleted_one(tmp_path: Path):
    url = f"embedded:{tmp_path / 'log'}"
    service = _start(url)
    try:
        assert _register(service, "a", A) == 1
        assert _register(service, "b", B) == 2
        requests.delete(f"{service.url}/subjects/b", timeout=30).raise_for_status()
        requests.delete(f"{service.url}/subjects/b?permanent=true", timeout=30) \
            .raise_for_status()
    finally:
        service.stop()
    again = _start(url)
    try:
        assert requests.get(f"{again.url}/subjects", timeout=30).json() == ["a"]
        assert requests.get(f"{again.url}/schemas/ids/1", timeout=30).json()["schema"] == A
        assert requests.get(f"{again.url}/schemas/ids/2", timeout=30).status_code == 404
        assert _register(again, "c", C) == 3
        assert _register(again, "b", B) == 4  # B's old id 2 is gone for good
    finally:
        again.stop()


def test_ids_are_not_reused_after_compaction_removed_a_deleted_schema(tmp_path: Path):
    """After a permanent delete of the schema holding the highest id, compaction removes
    its versions' records (tombstones included, after delete.retention.ms). The log is
    rebuilt here as compaction would leave it: every record but those of subject b."""
    url = f"embedded:{tmp_path / 'log'}"
    service = _start(url)
    try:
        assert _register(service, "a", A) == 1
        assert _register(service, "b", B) == 2
        requests.delete(f"{service.url}/subjects/b", timeout=30).raise_for_status()
        requests.delete(f"{service.url}/subjects/b?permanent=true", timeout=30) \
            .raise_for_status()
        records = _read_topic(url)
    finally:
        service.stop()
    kept = [(k, v) for k, v in records if b'"subject":"b"' not in k]
    assert (b'{"keytype":"NOOP","magic":1}', b'{"maxId":2}') in kept
    compacted = f"embedded:{tmp_path / 'compacted'}"
    with open_backend(compacted) as backend:
        backend.create_topic("_schemas", 1, {"cleanup.policy": "compact"})
        backend.produce("_schemas", [ProducerRecord(k, v) for k, v in kept])
    again = _start(compacted)
    try:
        assert _register(again, "c", C) == 3
    finally:
        again.stop()


def test_writes_are_confluent_records(tmp_path: Path):
    url = f"embedded:{tmp_path / 'log'}"
    service = _start(url)
    try:
        _register(service, "a", A)
        requests.put(f"{service.url}/config", json={"compatibility": "FULL"}, timeout=30)
        requests.put(f"{service.url}/mode/a", json={"mode": "READONLY"}, timeout=30)
        requests.delete(f"{service.url}/mode/a", timeout=30)
        requests.delete(f"{service.url}/subjects/a", timeout=30)
        records = _read_topic(url)
    finally:
        service.stop()
    assert [k for k, _ in records] == [
        b'{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}',
        b'{"keytype":"CONFIG","subject":null,"magic":0}',
        b'{"keytype":"MODE","subject":"a","magic":0}',
        b'{"keytype":"MODE","subject":"a","magic":0}',
        b'{"keytype":"DELETE_SUBJECT","subject":"a","magic":0}',
    ]
    values = [None if v is None else json.loads(v) for _, v in records]
    assert values == [
        {"subject": "a", "version": 1, "id": 1, "schema": A, "deleted": False},
        {"compatibilityLevel": "FULL"},
        {"subject": "a", "mode": "READONLY"},
        None,
        {"subject": "a", "version": 1},
    ]
    with open_backend(url) as backend:
        description = backend.describe_topic("_schemas")
    assert len(description.partitions) == 1
    assert description.configs["cleanup.policy"] == "compact"


def test_a_topic_written_by_confluent_is_read(tmp_path: Path):
    url = f"embedded:{tmp_path / 'log'}"
    json_schema = '{"type":"object","properties":{"n":{"type":"number"}}}'
    written = [
        (b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"NONE"}'),
        (b'{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}',
         json.dumps({"subject": "orders-value", "version": 1, "id": 11, "schema": A,
                     "deleted": False}).encode()),
        (b'{"keytype":"SCHEMA","subject":"orders-value","version":2,"magic":1}',
         json.dumps({"deleted": False, "id": 12, "schema": B, "subject": "orders-value",
                     "version": 2, "md5": "x"}).encode()),
        (b'{"keytype":"SCHEMA","subject":"json-value","version":1,"magic":0}',
         json.dumps({"subject": "json-value", "version": 1, "id": 20,
                     "schemaType": "JSON", "schema": json_schema}).encode()),
        (b'{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}',
         json.dumps({"subject": "gone", "version": 1, "id": 30, "schema": C,
                     "deleted": False}).encode()),
        (b'{"keytype":"DELETE_SUBJECT","subject":"gone","magic":0}',
         b'{"subject":"gone","version":1}'),
        (b'{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}', None),
        (b'{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}',
         json.dumps({"subject": "orders-value", "version": 1, "id": 11, "schema": A,
                     "deleted": True}).encode()),
        (b'{"keytype":"CONFIG","subject":"orders-value","magic":0}',
         b'{"compatibilityLevel":"FULL_TRANSITIVE"}'),
        (b'{"keytype":"MODE","subject":"json-value","magic":0}',
         b'{"subject":"json-value","mode":"READONLY"}'),
        (b'{"keytype":"CONTEXT","tenant":"default","context":".","magic":0}', b"{}"),
        (b"not a registry record", b"junk"),
        (b'{"keytype":"NOOP","magic":0}', None),
    ]
    with open_backend(url) as backend:
        backend.create_topic("_schemas", 1, {"cleanup.policy": "compact"})
        backend.produce("_schemas", [ProducerRecord(k, v) for k, v in written])
    service = _start(url)
    try:
        get = lambda path: requests.get(service.url + path, timeout=30)  # noqa: E731
        assert get("/subjects").json() == ["json-value", "orders-value"]
        assert get("/subjects/orders-value/versions").json() == [2]
        assert get("/subjects/orders-value/versions?deleted=true").json() == [1, 2]
        assert get("/schemas/ids/11").json()["schema"] == A
        assert {k: v for k, v in get("/schemas/ids/20").json().items() if k != "guid"} == \
            {"schema": json_schema, "schemaType": "JSON"}
        assert get("/schemas/ids/30").status_code == 404
        assert get("/config").json() == {"compatibilityLevel": "NONE"}
        assert get("/config/orders-value").json() == {"compatibilityLevel": "FULL_TRANSITIVE"}
        assert get("/mode/json-value").json() == {"mode": "READONLY"}
        lookup = requests.post(f"{service.url}/subjects/orders-value",
                               json={"schema": json.dumps(json.loads(B), indent=2)},
                               timeout=30).json()
        assert (lookup["version"], lookup["id"]) == (2, 12)
        assert _register(service, "new-value", C) == 31  # after the highest id ever seen
    finally:
        service.stop()


@pytest.mark.parametrize(("partitions", "configs", "problem"), [
    (3, {"cleanup.policy": "compact"}, "has 3 partitions"),
    (1, {"cleanup.policy": "delete"}, "cleanup.policy=delete"),
])
def test_an_unusable_topic_is_refused(tmp_path: Path, partitions, configs, problem):
    url = f"embedded:{tmp_path / 'log'}"
    with open_backend(url) as backend:
        backend.create_topic("_schemas", partitions, configs)
    service = RegistryService(url, listen="127.0.0.1:0")
    try:
        with pytest.raises(RegistryConfigError, match=problem):
            service.start(wait_ready=30)
        response = requests.get(f"{service.url}/subjects", timeout=30)
        assert response.status_code == 503
        assert problem in response.json()["message"]
    finally:
        service.stop()


def test_another_topic_name_and_skip_validation(tmp_path: Path):
    url = f"embedded:{tmp_path / 'log'}"
    with open_backend(url) as backend:
        backend.create_topic("my-schemas", 1, {"cleanup.policy": "delete"})
    service = _start(url, **{"kafkastore.topic": "my-schemas",
                             "kafkastore.topic.skip.validation": "true"})
    try:
        _register(service, "a", A)
    finally:
        service.stop()
    assert len(_read_topic(url, "my-schemas")) == 1


def test_an_unreachable_log_gives_json_5xx_not_a_hang():
    port = free_port()  # nothing listens there
    service = RegistryService(f"kafka://127.0.0.1:{port}", listen="127.0.0.1:0",
                              config={"kafkastore.timeout.ms": "3000"})
    service.start()
    try:
        for method, path, body in (("GET", "/subjects", None),
                                   ("POST", "/subjects/a/versions", {"schema": A}),
                                   ("GET", "/schemas/ids/1", None)):
            response = requests.request(method, service.url + path, json=body, timeout=60)
            assert response.status_code == 503, response.text
            error = response.json()
            assert error["error_code"] == 50001
            assert "not ready" in error["message"]
        assert requests.get(service.url + "/", timeout=60).json() == {}
    finally:
        service.stop()
