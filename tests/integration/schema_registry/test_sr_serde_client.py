"""``RegistryClient`` against a real Ferry registry: calls, caches, errors, threads."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import free_port
from sr_serde_helpers import running_registry

from schema_registry.schemas import Reference
from schema_registry.serde import (
    RegistryClient,
    RegistryClientError,
    RegistryUnavailableError,
    SchemaText,
)
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration


def avro(*fields: str, name: str = "User", default: str | None = None) -> SchemaText:
    extra = {} if default is None else {"default": default}
    return SchemaText(json.dumps({"type": "record", "name": name, "fields": [
        {"name": f, "type": "string", **(extra if i else {})} for i, f in enumerate(fields)]}))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[RegistryService]:
    with running_registry(tmp_path / "log") as svc:
        yield svc


@pytest.fixture
def client(service: RegistryService) -> Iterator[RegistryClient]:
    with RegistryClient(service.url, timeout_s=10) as c:
        yield c


def test_register_lookup_get_and_versions(client):
    first = client.register("users-value", avro("name"))
    assert client.register("users-value", avro("name")) == first
    second = client.register("users-value", avro("name", "email", default=""))
    assert second != first
    found = client.lookup("users-value", avro("name"))
    assert (found.subject, found.version, found.schema_id) == ("users-value", 1, first)
    assert json.loads(client.get_schema(first).schema)["name"] == "User"
    latest = client.get_latest_version("users-value")
    assert (latest.version, latest.schema_id) == (2, second)
    assert client.get_version("users-value", 1).schema_id == first


def test_json_schemas_and_references(client):
    point = SchemaText(json.dumps({"type": "object", "properties": {"x": {"type": "number"}}}),
                       "JSON")
    client.register("point-value", point)
    shape = SchemaText(json.dumps({"type": "object", "properties": {
        "p": {"$ref": "point.json"}}}), "JSON", (Reference("point.json", "point-value", 1),))
    schema_id = client.register("shape-value", shape)
    got = RegistryClient(client.urls).get_schema(schema_id)
    assert got.schema_type == "JSON"
    assert got.references == (Reference("point.json", "point-value", 1),)


def test_subjects_with_slashes_are_encoded(client):
    schema_id = client.register("a/b c-value", avro("x"))
    assert client.lookup("a/b c-value", avro("x")).schema_id == schema_id


@pytest.mark.parametrize("call, code", [
    (lambda c: c.lookup("missing-value", avro("x")), 40401),
    (lambda c: c.get_schema(999), 40403),
    (lambda c: c.get_latest_version("missing-value"), 40401),
    (lambda c: c.register("bad-value", SchemaText('{"type":"record"}')), 42201),
])
def test_registry_errors_carry_confluents_codes(client, call, code):
    with pytest.raises(RegistryClientError) as info:
        call(client)
    assert info.value.error_code == code
    assert info.value.message and not info.value.retriable


def test_schema_not_under_subject_is_40403(client):
    client.register("s-value", avro("a"))
    with pytest.raises(RegistryClientError) as info:
        client.lookup("s-value", avro("b"))
    assert (info.value.status, info.value.error_code) == (404, 40403)


def test_incompatible_registration_is_409(client):
    client.register("c-value", avro("a"))
    with pytest.raises(RegistryClientError) as info:
        client.register("c-value", avro("a", "b"))  # a new field without a default
    assert info.value.error_code == 409


def test_answers_are_cached(service):
    client = RegistryClient(service.url, timeout_s=2)
    schema_id = client.register("k-value", avro("a"))
    client.lookup("k-value", avro("a"))
    client.get_schema(schema_id)
    latest = client.get_latest_version("k-value")
    service.stop()
    assert client.register("k-value", avro("a")) == schema_id
    assert client.lookup("k-value", avro("a")).schema_id == schema_id
    assert client.get_schema(schema_id).schema == avro("a").schema
    assert client.get_latest_version("k-value") == latest
    with pytest.raises(RegistryUnavailableError):
        client.get_schema(schema_id + 1)
    client.close()


def test_latest_version_is_cached_for_its_ttl(service):
    uncached = RegistryClient(service.url, latest_ttl_s=0)
    cached = RegistryClient(service.url)
    uncached.register("t-value", avro("a"))
    assert uncached.get_latest_version("t-value").version == 1
    assert cached.get_latest_version("t-value").version == 1
    uncached.register("t-value", avro("a", "b", default=""))
    assert uncached.get_latest_version("t-value").version == 2
    assert cached.get_latest_version("t-value").version == 1
    uncached.close()
    cached.close()


def test_unreachable_registry_is_retriable_within_the_timeout():
    client = RegistryClient(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    start = time.monotonic()
    with pytest.raises(RegistryUnavailableError) as info:
        client.get_schema(1)
    assert info.value.retriable
    assert "schema.registry.url" in str(info.value)
    assert time.monotonic() - start < 30


def test_a_dead_url_is_skipped_for_the_next(service):
    dead = f"http://127.0.0.1:{free_port()}"
    with RegistryClient([dead, service.url], timeout_s=5) as client:
        assert client.register("f-value", avro("a")) >= 1
        assert client.get_version("f-value", 1).version == 1


def test_concurrent_registrations_agree_on_one_id(client):
    results: list[int] = []
    errors: list[BaseException] = []

    def register(i: int) -> None:
        try:
            results.append(client.register(f"conc-{i % 3}-value", avro("x", name="Conc")))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=register, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert len(results) == 12 and len(set(results)) == 1


def test_bad_urls_are_refused():
    with pytest.raises(ValueError, match="http://"):
        RegistryClient("localhost:8081")
    with pytest.raises(ValueError, match="at least one"):
        RegistryClient(" , ")
