"""Raw HTTP against the registry: every error code, content types, shapes and parameters.

Each test starts a real ``RegistryService`` (waitress on a free port) over an ``embedded:``
log in a temporary directory and talks to it with ``requests``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

V1 = "application/vnd.schemaregistry.v1+json"
VND = "application/vnd.schemaregistry+json"
JSON_TYPE = "application/json"

USER_1 = json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}]})
USER_2 = json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}]})
USER_BAD = json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "a", "type": "int"},
    {"name": "b", "type": "long"}]})


class Api:
    """A tiny client: ``api.post("/subjects/s/versions", {...})`` → (status, json)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()

    def call(self, method: str, path: str, body: object = None, *, headers=None,
             data: bytes | None = None) -> requests.Response:
        if data is None and body is not None:
            data = json.dumps(body).encode()
        sent = {"Content-Type": V1} if data is not None else {}
        sent.update(headers or {})
        return self.session.request(method, self.url + path, data=data, headers=sent,
                                    timeout=30)

    def get(self, path: str, **kw) -> requests.Response:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: object = None, **kw) -> requests.Response:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: object = None, **kw) -> requests.Response:
        return self.call("PUT", path, body, **kw)

    def delete(self, path: str, **kw) -> requests.Response:
        return self.call("DELETE", path, **kw)

    def register(self, subject: str, schema: str, **extra) -> int:
        response = self.post(f"/subjects/{quote(subject, safe='')}/versions",
                             {"schema": schema, **extra})
        assert response.status_code == 200, response.text
        return response.json()["id"]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    service = RegistryService(f"embedded:{tmp_path / 'log'}", listen="127.0.0.1:0",
                              config={"kafkagroup.heartbeat.interval.ms": "500"})
    service.start(wait_ready=30)
    assert service.ready
    yield Api(service.url)
    service.stop()


def expect_error(response: requests.Response, status: int, code: int,
                 contains: str = "") -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error_code", "message"]
    assert body["error_code"] == code, body
    assert contains in body["message"], body
    return body["message"]


# ------------------------------------------------------------------------------ 404s


def test_unknown_subject_is_40401_everywhere(api):
    msg = expect_error(api.get("/subjects/nope/versions"), 404, 40401)
    assert msg == "Subject 'nope' not found."
    expect_error(api.get("/subjects/nope/versions/1"), 404, 40401)
    expect_error(api.get("/subjects/nope/versions/latest"), 404, 40401)
    expect_error(api.delete("/subjects/nope"), 404, 40401)
    expect_error(api.post("/subjects/nope", {"schema": USER_1}), 404, 40401)
    expect_error(api.delete("/config/nope"), 404, 40401)


def test_unknown_version_is_40402_and_unknown_schema_40403(api):
    api.register("s", USER_1)
    assert expect_error(api.get("/subjects/s/versions/5"), 404, 40402) == "Version 5 not found."
    assert expect_error(api.get("/schemas/ids/99"), 404, 40403) == "Schema 99 not found"
    expect_error(api.get("/schemas/ids/99/schema"), 404, 40403)
    expect_error(api.get("/schemas/ids/99/subjects"), 404, 40403)
    expect_error(api.get("/schemas/ids/99/versions"), 404, 40403)
    assert expect_error(api.post("/subjects/s", {"schema": USER_2}), 404, 40403) == \
        "Schema not found"
    expect_error(api.post("/compatibility/subjects/s/versions/7", {"schema": USER_2}),
                 404, 40402)


def test_lookup_parses_first_and_an_empty_schema_matches_nothing(api):
    # Confluent's SubjectsResource: an invalid schema is 42201 even under an unknown
    # subject; an empty one is simply not found (40401 / 40403), not "Empty schema".
    expect_error(api.post("/subjects/nobody", {"schema": "{not json"}), 422, 42201,
                 "Invalid schema of type AVRO, details: ")
    expect_error(api.post("/subjects/nobody", {"schema": ""}), 404, 40401)
    api.register("s", USER_1)
    expect_error(api.post("/subjects/s", {"schema": " "}), 404, 40403)


def test_a_version_out_of_sequence_is_42201_in_confluents_words(api):
    api.register("s", USER_1)
    expect_error(api.post("/subjects/s/versions", {"schema": USER_2, "version": 5}), 422,
                 42201, "Version is not one more than previous version")


def test_delete_error_codes_40404_to_40407(api):
    api.register("s", USER_1)
    api.register("s", USER_2)
    expect_error(api.delete("/subjects/s?permanent=true"), 404, 40405, "was not deleted first")
    expect_error(api.delete("/subjects/s/versions/1?permanent=true"), 404, 40407)
    assert api.delete("/subjects/s/versions/1").json() == 1
    expect_error(api.delete("/subjects/s/versions/1"), 404, 40406, "Version 1 was soft deleted")
    assert api.delete("/subjects/s").json() == [2]
    expect_error(api.delete("/subjects/s"), 404, 40404, "was soft deleted")
    assert api.delete("/subjects/s?permanent=true").json() == [1, 2]
    expect_error(api.delete("/subjects/s"), 404, 40401)


def test_subject_level_config_and_mode_not_configured_are_40408_and_40409(api):
    api.register("s", USER_1)
    expect_error(api.get("/config/s"), 404, 40408,
                 "Subject 's' does not have subject-level compatibility configured")
    assert api.get("/config/s?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}
    expect_error(api.get("/mode/s"), 404, 40409)
    assert api.get("/mode/s?defaultToGlobal=TRUE").json() == {"mode": "READWRITE"}
    expect_error(api.delete("/mode/s"), 404, 40409)


def test_unknown_routes_and_methods_answer_json(api):
    expect_error(api.get("/no/such/thing"), 404, 404, "HTTP 404 Not Found")
    expect_error(api.get("/schemas/ids/abc"), 404, 404)
    expect_error(api.call("PATCH", "/subjects"), 405, 405)


# ------------------------------------------------------------------------------ 409 / 422


def test_incompatible_schema_lists_every_incompatibility(api):
    api.register("s", USER_1)
    msg = expect_error(api.post("/subjects/s/versions", {"schema": USER_BAD}), 409, 409)
    assert msg.startswith('Schema being registered is incompatible with an earlier schema for '
                          'subject "s", details: [')
    assert msg.count("READER_FIELD_MISSING_DEFAULT_VALUE") == 2
    assert "'a'" in msg and "'b'" in msg
    assert "{oldSchemaVersion: 1}" in msg
    assert "compatibility: 'BACKWARD'" in msg
    verbose = api.post("/compatibility/subjects/s/versions/latest?verbose=True",
                       {"schema": USER_BAD}).json()
    assert verbose["is_compatible"] is False
    assert sum("READER_FIELD_MISSING_DEFAULT_VALUE" in m for m in verbose["messages"]) == 2
    plain = api.post("/compatibility/subjects/s/versions/latest", {"schema": USER_BAD}).json()
    assert plain == {"is_compatible": False}


@pytest.mark.parametrize(("body", "fragment"), [
    ({"schema": "{not json"}, "Invalid schema of type AVRO, details: "),
    ({"schema": json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "x", "type": "int32"}]})}, "int32"),
    ({"schema": '{"type":"object"}', "schemaType": "XML"}, "Invalid schema type XML"),
    ({"schema": ""}, "Empty schema"),
    ({"schema": "   "}, "Empty schema"),
    ({}, "schema"),
    ({"schema": USER_1, "references": [{"name": "X", "subject": "missing", "version": 1}]},
     "missing"),
])
def test_invalid_schemas_are_42201_naming_the_problem(api, body, fragment):
    expect_error(api.post("/subjects/s/versions", body), 422, 42201, fragment)


def test_invalid_schema_in_a_verbose_compatibility_check_is_a_message(api):
    api.register("s", USER_1)
    result = api.post("/compatibility/subjects/s/versions/latest?verbose=true",
                      {"schema": "{not json"}).json()
    assert result["is_compatible"] is False and len(result["messages"]) == 1


@pytest.mark.parametrize("version", ["0", "abc", "-2", "2147483648"])
def test_invalid_versions_are_42202(api, version):
    api.register("s", USER_1)
    expect_error(api.get(f"/subjects/s/versions/{version}"), 422, 42202,
                 f"The specified version '{version}' is not a valid version id")


def test_invalid_level_42203_and_mode_42204(api):
    expect_error(api.put("/config", {"compatibility": "SIDEWAYS"}), 422, 42203,
                 "Invalid compatibility level")
    expect_error(api.put("/config/s", {}), 422, 42203)
    expect_error(api.put("/mode", {"mode": "WRITEONLY"}), 422, 42204, "Invalid mode")


def test_operation_not_permitted_is_42205(api):
    api.register("s", USER_1)
    expect_error(api.put("/mode", {"mode": "IMPORT"}), 422, 42205,
                 "Cannot import since found existing subjects")
    assert api.put("/mode", {"mode": "READONLY"}).json() == {"mode": "READONLY"}
    expect_error(api.post("/subjects/s/versions", {"schema": USER_2}), 422, 42205,
                 "Subject s is in read-only mode")
    expect_error(api.delete("/subjects/s"), 422, 42205)
    assert api.delete("/mode").json() == {"mode": "READONLY"}
    expect_error(api.post("/subjects/s/versions", {"schema": USER_2, "id": 50}), 422, 42205,
                 "Subject s is not in import mode")


def test_referenced_schemas_cannot_be_deleted_42206(api):
    api.register("base", json.dumps({"type": "record", "name": "Base", "fields": []}))
    api.register("user", json.dumps({"type": "record", "name": "U", "fields": [
        {"name": "b", "type": "Base"}]}), references=[
        {"name": "Base", "subject": "base", "version": 1}])
    expect_error(api.delete("/subjects/base/versions/1"), 422, 42206,
                 "One or more references exist to the schema")
    assert api.get("/subjects/base/versions/1/referencedby").json() == [2]


def test_import_mode_takes_ids_and_versions_and_checks_them_42207(api):
    assert api.put("/mode", {"mode": "IMPORT"}).json() == {"mode": "IMPORT"}
    assert api.register("s", USER_1, id=100, version=3) == 100
    assert api.get("/subjects/s/versions").json() == [3]
    expect_error(api.post("/subjects/t/versions", {"schema": USER_2, "id": 100}), 422, 42207)
    api.put("/mode", {"mode": "READWRITE"})
    assert api.register("s", USER_2) == 101
    assert api.get("/subjects/s/versions").json() == [3, 4]


@pytest.mark.parametrize("subject", ["__GLOBAL", "bad\u0007subject"])
def test_invalid_subjects_are_42208(api, subject):
    expect_error(api.post(f"/subjects/{quote(subject, safe='')}/versions", {"schema": USER_1}),
                 422, 42208, "is not a valid")


# ------------------------------------------------------------------------------ content types


@pytest.mark.parametrize("content_type", [V1, VND, JSON_TYPE, "application/octet-stream",
                                          f"{JSON_TYPE}; charset=utf-8"])
def test_accepted_request_content_types(api, content_type):
    response = api.post("/subjects/s/versions", {"schema": USER_1},
                        headers={"Content-Type": content_type})
    assert response.status_code == 200, response.text


def test_a_request_without_content_type_is_accepted(api):
    response = requests.post(api.url + "/subjects/s/versions",
                             data=json.dumps({"schema": USER_1}).encode(), timeout=30)
    assert response.status_code == 200 and response.json()["id"] == 1


def test_foreign_content_type_is_415_and_bad_json_400(api):
    expect_error(api.post("/subjects/s/versions", {"schema": USER_1},
                          headers={"Content-Type": "text/plain"}), 415, 415)
    expect_error(api.post("/subjects/s/versions", data=b"{nope"), 400, 400)


@pytest.mark.parametrize(("accept", "expected"), [
    (None, V1), ("*/*", V1), (V1, V1), (VND, VND), (JSON_TYPE, JSON_TYPE),
    (f"{V1}, {VND}, {JSON_TYPE}", V1), (f"{JSON_TYPE}, {VND};q=0.9", JSON_TYPE),
    # The JDK HttpURLConnection default: a bare "*" and q-values without a leading 0.
    ("text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", V1),
    (f"text/html, {JSON_TYPE}; q=.5", JSON_TYPE), (f"{VND}; q=1., {V1}; q=.9", VND),
])
def test_response_content_type_negotiation(api, accept, expected):
    response = api.get("/subjects", headers={"Accept": accept} if accept else {})
    assert response.status_code == 200
    assert response.headers["Content-Type"].split(";")[0] == expected


def test_unacceptable_accept_is_406(api):
    expect_error(api.get("/subjects", headers={"Accept": "text/html"}), 406, 406)


# ------------------------------------------------------------------------------ shapes


def test_response_shapes_and_field_order(api):
    assert api.get("/").json() == {}
    api.register("s", USER_1)
    version = api.get("/subjects/s/versions/1").json()
    assert list(version) == ["subject", "version", "id", "guid", "schema"]
    json_id = api.register("j", '{"type":"object"}', schemaType="JSON")
    assert list(api.get("/subjects/j/versions/latest").json()) == [
        "subject", "version", "id", "guid", "schemaType", "schema"]
    assert list(api.get(f"/schemas/ids/{json_id}").json()) == ["schema", "schemaType", "guid"]
    assert api.get("/schemas/ids/1?fetchMaxId=true").json()["maxId"] == json_id
    assert json.loads(api.get("/schemas/ids/1/schema").text) == json.loads(USER_1)
    assert json.loads(api.get("/subjects/s/versions/1/schema").text) == json.loads(USER_1)
    assert api.get("/schemas/ids/1/versions").json() == [{"subject": "s", "version": 1}]
    assert api.get("/schemas/types").json() == ["JSON", "AVRO"]
    assert api.get("/contexts").json() == ["."]
    lookup = api.post("/subjects/s", {"schema": USER_1}).json()
    assert lookup == {"subject": "s", "version": 1, "id": 1, "guid": version["guid"],
                      "schema": version["schema"]}


def test_unknown_request_fields_are_ignored(api):
    body = {"schema": USER_1, "schemaType": "avro", "metadata": {"properties": {"a": "b"}},
            "ruleSet": {"domainRules": []}, "somethingNew": 1}
    assert api.post("/subjects/s/versions", body).json()["id"] == 1
    assert api.post("/subjects/s", body).json()["version"] == 1


def test_listing_parameters(api):
    api.register("a-value", USER_1)
    api.register("a-value", USER_2)
    api.register("b-value", USER_1)
    api.register("c-key", USER_2)
    api.delete("/subjects/b-value")
    assert api.get("/subjects").json() == ["a-value", "c-key"]
    assert api.get("/subjects?deleted=True").json() == ["a-value", "b-value", "c-key"]
    assert api.get("/subjects?deleted_only=true").json() == ["b-value"]
    assert api.get("/subjects?deletedOnly=TRUE").json() == ["b-value"]
    assert api.get("/subjects?subjectPrefix=a").json() == ["a-value"]
    assert api.get("/subjects?offset=1&limit=1").json() == ["c-key"]
    api.delete("/subjects/a-value/versions/1")
    assert api.get("/subjects/a-value/versions").json() == [2]
    assert api.get("/subjects/a-value/versions?deleted=true").json() == [1, 2]
    assert api.get("/subjects/a-value/versions?deletedAsNegative=true").json() == [-1, 2]
    assert api.get("/subjects/a-value/versions/1?deleted=true").json()["id"] == 1
    expect_error(api.get("/subjects/a-value/versions/1"), 404, 40402)
    listed = api.get("/schemas").json()
    assert [(s["subject"], s["version"]) for s in listed] == [("a-value", 2), ("c-key", 1)]
    latest = api.get("/schemas?latestOnly=true&deleted=true&subjectPrefix=a").json()
    assert [(s["subject"], s["version"]) for s in latest] == [("a-value", 2)]
    assert api.get("/schemas/ids/1/subjects").json() == []
    assert api.get("/schemas/ids/1/subjects?deleted=true").json() == ["a-value", "b-value"]


def test_version_latest_and_minus_one(api):
    api.register("s", USER_1)
    api.register("s", USER_2)
    assert api.get("/subjects/s/versions/latest").json()["version"] == 2
    assert api.get("/subjects/s/versions/LATEST").json()["version"] == 2
    assert api.get("/subjects/s/versions/-1").json()["version"] == 2
    assert api.delete("/subjects/s/versions/latest").json() == 2
    assert api.get("/subjects/s/versions/latest").json()["version"] == 1


def test_config_put_get_delete(api):
    assert api.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert api.put("/config", {"compatibility": "full"}).json() == {"compatibility": "FULL"}
    assert api.get("/config").json() == {"compatibilityLevel": "FULL"}
    assert api.put("/config/nothing-yet", {"compatibility": "NONE"}).json() == {
        "compatibility": "NONE"}
    assert api.get("/config/nothing-yet").json() == {"compatibilityLevel": "NONE"}
    assert api.delete("/config/nothing-yet").json() == {"compatibilityLevel": "NONE"}
    assert api.delete("/config").json() == {"compatibilityLevel": "FULL"}
    assert api.get("/config").json() == {"compatibilityLevel": "BACKWARD"}


def test_compatibility_of_an_unknown_subject_is_true_for_latest(api):
    response = api.post("/compatibility/subjects/nobody/versions/latest", {"schema": USER_1})
    assert response.json() == {"is_compatible": True}
    # A numbered version that does not exist is 40402, subject or not (Confluent's
    # CompatibilityResource), and is checked before the body.
    assert expect_error(api.post("/compatibility/subjects/nobody/versions/1",
                                 {"schema": USER_1}), 404, 40402) == "Version 1 not found."
    expect_error(api.post("/compatibility/subjects/nobody/versions/1", {"schema": ""}),
                 404, 40402)
    expect_error(api.post("/compatibility/subjects/nobody/versions/latest", {"schema": ""}),
                 422, 42201, "Empty schema")
