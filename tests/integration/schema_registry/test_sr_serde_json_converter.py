"""``JsonSchemaConverter`` through a real Ferry registry, and against Confluent's own
JSON Schema serializer and deserializer (``confluent_kafka.schema_registry.json_schema``)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from sr_serde_helpers import (
    SUBJECT_STRATEGIES,
    configured,
    running_registry,
    written_with_strategy,
)
from sr_serde_helpers import value_ctx as ctx

from connect.api.data import Date, Schema, SchemaBuilder, Struct, Timestamp
from connect.api.errors import DataError
from connect.converters.aliases import resolve_converter
from schema_registry.serde import JsonSchemaConverter, RegistryClient
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryService]:
    with running_registry(tmp_path_factory.mktemp("json-converter") / "log") as svc:
        yield svc


def converter(registry: RegistryService, is_key: bool = False,
              **configs: str) -> JsonSchemaConverter:
    return configured(JsonSchemaConverter, registry, is_key, **configs)


TAG = SchemaBuilder.struct().name("Tag").field("k", Schema.STRING_SCHEMA).build()
PERSON = (
    SchemaBuilder.struct().name("Person").version(1)
    .field("name", Schema.STRING_SCHEMA).field("age", Schema.OPTIONAL_INT32_SCHEMA)
    .field("score", Schema.FLOAT64_SCHEMA).field("active", Schema.BOOLEAN_SCHEMA)
    .field("born", Date.SCHEMA).field("seen", Timestamp.SCHEMA)
    .field("photo", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("tags", SchemaBuilder.array(TAG).build())
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build())
    .build()
)


def person() -> Struct:
    return (Struct(PERSON).put("name", "Ann").put("age", 41).put("score", 9.5)
            .put("active", True).put("born", dt.date(1983, 3, 1))
            .put("seen", dt.datetime(2024, 6, 1, tzinfo=dt.UTC)).put("photo", b"\x89PNG")
            .put("tags", [Struct(TAG).put("k", "x")]).put("attrs", {"team": "blue"}))


def test_connect_data_round_trips_through_the_registry(registry):
    data = converter(registry).from_connect_data("people", PERSON, person())
    assert data[:1] == b"\x00"
    got = converter(registry, **{"json.fail.invalid.schema": "true"}).to_connect_data(
        "people", data)
    assert got.schema == PERSON
    assert got.value == person()
    latest = RegistryClient(registry.url).get_latest_version("people-value")
    assert latest.schema.schema_type == "JSON"
    assert json.loads(latest.schema.schema)["title"] == "Person"


def test_what_confluents_json_serializer_writes_reads_as_connect_data(registry):
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Pet",
              "type": "object", "properties": {
                  "name": {"type": "string"}, "legs": {"type": "integer"},
                  "weight": {"type": "number"},
                  "owner": {"type": "object", "properties": {"id": {"type": "integer"}}},
                  "nick": {"type": ["string", "null"]}},
              "required": ["name"]}
    serializer = JSONSerializer(json.dumps(schema), SchemaRegistryClient({"url": registry.url}))
    data = serializer({"name": "Rex", "legs": 4, "weight": 31.5, "owner": {"id": 7},
                       "nick": None}, ctx("pets"))
    got = converter(registry, **{"json.fail.invalid.schema": "true"}).to_connect_data(
        "pets", data)
    assert got.schema.name == "Pet" and got.schema.version == 1
    value = got.value
    assert (value.get("name"), value.get("legs"), value.get("weight")) == ("Rex", 4, 31.5)
    assert value.get("owner").get("id") == 7 and value.get("nick") is None
    assert got.schema.field("legs").schema.type.value == "int64"


def test_confluents_json_deserializer_reads_what_the_converter_writes(registry):
    data = converter(registry).from_connect_data("people-out", PERSON, person())
    plain = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient(
        {"url": registry.url}))(data, ctx("people-out"))
    assert plain == {"name": "Ann", "age": 41, "score": 9.5, "active": True, "born": 4807,
                     "seen": 1717200000000, "photo": "iVBORw==", "tags": [{"k": "x"}],
                     "attrs": {"team": "blue"}}


@pytest.mark.parametrize("strategy, python_strategy, expected", SUBJECT_STRATEGIES)
def test_subject_strategies_name_subjects_as_confluents_serializers(
        registry, strategy, python_strategy, expected):
    ours, theirs = written_with_strategy(
        registry, JsonSchemaConverter,
        lambda conv, schema, client, conf: JSONSerializer(
            conv.json_schema_data.writer(schema).text, client, conf=conf),
        strategy, python_strategy, expected,
        topic=f"jstrat-{strategy.lower()}", record=f"J{strategy}Rec")
    assert theirs[:5] == ours[:5]
    assert json.loads(theirs[5:]) == json.loads(ours[5:])


def test_invalid_documents_fail_only_when_asked(registry):
    schema = {"title": "Strict", "type": "object",
              "properties": {"n": {"type": "integer", "minimum": 0}}}
    serializer = JSONSerializer(json.dumps(schema), SchemaRegistryClient({"url": registry.url}))
    data = serializer({"n": 1}, ctx("strict"))
    bad = data[:5] + b'{"n": -1}'
    assert converter(registry).to_connect_data("strict", bad).value.get("n") == -1
    with pytest.raises(DataError, match="minimum"):
        converter(registry, **{"json.fail.invalid.schema": "true"}).to_connect_data(
            "strict", bad)


def test_tombstones_and_errors(registry):
    conv = converter(registry)
    assert conv.from_connect_data("t", PERSON, None) is None
    assert conv.to_connect_data("t", None).value is None
    with pytest.raises(DataError, match="needs a schema"):
        conv.from_connect_data("t", None, {"a": 1})
    with pytest.raises(DataError, match="Unknown magic byte"):
        conv.to_connect_data("t", b'{"a":1}')


def test_confluent_class_name_resolves():
    assert resolve_converter("io.confluent.connect.json.JsonSchemaConverter") is \
        JsonSchemaConverter
    assert resolve_converter("JsonSchemaConverter") is JsonSchemaConverter
