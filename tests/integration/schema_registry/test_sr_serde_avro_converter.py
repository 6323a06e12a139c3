"""``AvroConverter`` through a real Ferry registry, and against Confluent's own Avro
serializer and deserializer (``confluent_kafka.schema_registry.avro``)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator

import pytest
from broker_process import free_port
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from sr_serde_helpers import (
    SUBJECT_STRATEGIES,
    configured,
    running_registry,
    written_with_strategy,
)
from sr_serde_helpers import value_ctx as ctx

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect.api.errors import ConfigError, DataError, RetriableError
from connect.converters.aliases import resolve_converter
from schema_registry.serde import AvroConverter, RegistryClient, SchemaText
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

UTC = dt.UTC


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryService]:
    with running_registry(tmp_path_factory.mktemp("avro-converter") / "log") as svc:
        yield svc


def converter(registry: RegistryService, is_key: bool = False, **configs: str) -> AvroConverter:
    return configured(AvroConverter, registry, is_key, **configs)


ITEM = SchemaBuilder.struct().name("shop.Item").field("sku", Schema.STRING_SCHEMA).build()
ORDER = (
    SchemaBuilder.struct().name("shop.Order").version(1)
    .field("id", Schema.INT64_SCHEMA).field("small", Schema.INT8_SCHEMA)
    .field("ratio", Schema.FLOAT32_SCHEMA).field("ok", Schema.BOOLEAN_SCHEMA)
    .field("raw", Schema.BYTES_SCHEMA).field("price", Decimal.schema(2))
    .field("day", Date.SCHEMA).field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
    .field("note", Schema.OPTIONAL_STRING_SCHEMA).field("item", ITEM)
    .field("items", SchemaBuilder.array(ITEM).build())
    .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
    .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
    .build()
)


def order() -> Struct:
    item = Struct(ITEM).put("sku", "A-1")
    return (Struct(ORDER).put("id", 42).put("small", -7).put("ratio", 0.25).put("ok", True)
            .put("raw", b"\x00\x01").put("price", decimal.Decimal("19.99"))
            .put("day", dt.date(2024, 5, 1)).put("at", dt.time(8, 30))
            .put("ts", dt.datetime(2024, 5, 1, 8, 30, 0, 250000, tzinfo=UTC))
            .put("item", item).put("items", [item]).put("counts", {"a": 1})
            .put("by_id", {1: "one"}))


def test_connect_data_round_trips_through_the_registry(registry):
    data = converter(registry).from_connect_data("orders", ORDER, order())
    assert data[:1] == b"\x00"
    got = converter(registry).to_connect_data("orders", data)
    assert got.schema == ORDER
    assert got.value == order()
    latest = RegistryClient(registry.url).get_latest_version("orders-value")
    assert int.from_bytes(data[1:5], "big") == latest.schema_id
    assert json.loads(latest.schema.schema)["connect.name"] == "shop.Order"


def test_keys_use_the_key_subject_and_tombstones_stay_null(registry):
    conv = converter(registry, is_key=True)
    data = conv.from_connect_data("keys", Schema.STRING_SCHEMA, "k1")
    assert RegistryClient(registry.url).get_latest_version("keys-key").schema.schema == \
        '"string"'
    assert conv.to_connect_data("keys", data).value == "k1"
    assert conv.from_connect_data("keys", Schema.OPTIONAL_STRING_SCHEMA, None) is None
    assert conv.to_connect_data("keys", None).schema is None
    with pytest.raises(DataError, match="non-optional"):
        conv.from_connect_data("keys", Schema.STRING_SCHEMA, None)


def test_schemaless_values_round_trip(registry):
    value = {"a": [1, 2.5, "x", None], "b": {"nested": True}}
    conv = converter(registry)
    got = conv.to_connect_data("loose", conv.from_connect_data("loose", None, value))
    assert got.schema is None and got.value == value


def test_what_confluents_avro_serializer_writes_reads_as_connect_data(registry):
    client = SchemaRegistryClient({"url": registry.url})
    schema = {
        "type": "record", "name": "Payment", "namespace": "pay",
        "fields": [
            {"name": "id", "type": "string"},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                        "precision": 10, "scale": 2}},
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "on", "type": {"type": "int", "logicalType": "date"}},
            {"name": "status", "type": {"type": "enum", "name": "Status",
                                        "symbols": ["NEW", "DONE"]}},
            {"name": "memo", "type": ["null", "string"], "default": None},
            {"name": "lines", "type": {"type": "array", "items": {
                "type": "record", "name": "Line", "fields": [
                    {"name": "qty", "type": "int"}, {"name": "price", "type": "double"}]}}},
            {"name": "meta", "type": {"type": "map", "values": "string"}},
            {"name": "retries", "type": "int", "default": 0},
        ],
    }
    serializer = AvroSerializer(client, json.dumps(schema))
    data = serializer({
        "id": "p1", "amount": decimal.Decimal("12.50"),
        "when": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "on": dt.date(2024, 1, 2),
        "status": "DONE", "memo": None, "lines": [{"qty": 2, "price": 1.25}],
        "meta": {"k": "v"}, "retries": 3}, ctx("payments"))
    got = converter(registry).to_connect_data("payments", data)
    value, schema = got.value, got.schema
    assert schema.name == "pay.Payment" and schema.version == 1
    assert value.get("id") == "p1"
    assert value.get("amount") == decimal.Decimal("12.50")
    assert schema.field("amount").schema.parameters["connect.decimal.precision"] == "10"
    assert value.get("when") == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert value.get("on") == dt.date(2024, 1, 2)
    assert value.get("status") == "DONE"
    assert schema.field("status").schema.parameters["io.confluent.connect.avro.Enum"] == \
        "pay.Status"
    assert value.get("memo") is None
    line = value.get("lines")[0]
    assert (line.get("qty"), line.get("price")) == (2, 1.25)
    assert line.schema.name == "pay.Line"
    assert value.get("meta") == {"k": "v"} and value.get("retries") == 3
    assert schema.field("retries").schema.default_value == 0


def test_confluents_avro_deserializer_reads_what_the_converter_writes(registry):
    data = converter(registry).from_connect_data("orders-out", ORDER, order())
    client = SchemaRegistryClient({"url": registry.url})
    plain = AvroDeserializer(client)(data, ctx("orders-out"))
    assert plain["id"] == 42 and plain["small"] == -7 and plain["ratio"] == 0.25
    assert plain["raw"] == b"\x00\x01"
    assert plain["price"] == decimal.Decimal("19.99")
    assert plain["day"] == dt.date(2024, 5, 1)
    assert plain["at"] == dt.time(8, 30)
    assert plain["ts"] == dt.datetime(2024, 5, 1, 8, 30, 0, 250000, tzinfo=UTC)
    assert plain["note"] is None
    assert plain["item"] == {"sku": "A-1"} and plain["items"] == [{"sku": "A-1"}]
    assert plain["counts"] == {"a": 1}
    assert plain["by_id"] == [{"key": 1, "value": "one"}]


@pytest.mark.parametrize("strategy, python_strategy, expected", SUBJECT_STRATEGIES)
def test_subject_strategies_name_subjects_as_confluents_serializers(
        registry, strategy, python_strategy, expected):
    # Confluent's serializer, same strategy, same topic and schema: it finds the subject
    # the converter made (no new subject) and the same schema id there
    ours, theirs = written_with_strategy(
        registry, AvroConverter,
        lambda conv, schema, client, conf: AvroSerializer(
            client, conv.avro_data.writer(schema).text, conf=conf),
        strategy, python_strategy, expected,
        topic=f"strat-{strategy.lower()}", record=f"strategies.{strategy}Rec")
    assert theirs == ours


def test_auto_register_off_looks_the_schema_up(registry):
    schema = SchemaBuilder.struct().name("lk.Rec").field("a", Schema.STRING_SCHEMA).build()
    value = Struct(schema).put("a", "x")
    strict = converter(registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataError, match="40401"):
        strict.from_connect_data("lookup", schema, value)
    registered = converter(registry).from_connect_data("lookup", schema, value)
    assert strict.from_connect_data("lookup", schema, value) == registered


def test_use_latest_version_writes_with_the_latest_schema(registry):
    client = RegistryClient(registry.url)
    v1 = {"type": "record", "name": "Evolving", "namespace": "lv",
          "fields": [{"name": "a", "type": "string"}]}
    v2 = {**v1, "fields": v1["fields"] + [{"name": "b", "type": "int", "default": 5}]}
    client.register("latest-value", SchemaText(json.dumps(v1)))
    v2_id = client.register("latest-value", SchemaText(json.dumps(v2)))
    schema = SchemaBuilder.struct().name("lv.Evolving").field("a", Schema.STRING_SCHEMA).build()
    conv = converter(registry, **{"auto.register.schemas": "false",
                                  "use.latest.version": "true"})
    data = conv.from_connect_data("latest", schema, Struct(schema).put("a", "x"))
    assert int.from_bytes(data[1:5], "big") == v2_id
    plain = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))(data, ctx("latest"))
    assert plain == {"a": "x", "b": 5}


def test_unknown_ids_and_unframed_bytes_are_data_errors(registry):
    conv = converter(registry)
    with pytest.raises(DataError, match="40403"):
        conv.to_connect_data("t", b"\x00\x00\x00\x7f\xff\x02")
    with pytest.raises(DataError, match="Unknown magic byte"):
        conv.to_connect_data("t", b'{"plain": "json"}')


def test_json_schema_data_is_refused_by_the_avro_converter(registry):
    schema_id = RegistryClient(registry.url).register(
        "mixed-value", SchemaText('{"type":"string"}', "JSON"))
    with pytest.raises(DataError, match="not Avro"):
        converter(registry).to_connect_data("mixed", b"\x00" + schema_id.to_bytes(4, "big")
                                            + b'"x"')


def test_an_unreachable_registry_is_retriable():
    conv = AvroConverter()
    conv.configure({"schema.registry.url": f"http://127.0.0.1:{free_port()}",
                    "http.connect.timeout.ms": "2000", "http.read.timeout.ms": "2000"}, False)
    with pytest.raises(RetriableError):
        conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")
    with pytest.raises(RetriableError):
        conv.to_connect_data("t", b"\x00\x00\x00\x00\x01\x02x")


def test_confluent_class_name_and_sub_keys_configure_it(registry):
    cls = resolve_converter("io.confluent.connect.avro.AvroConverter")
    assert cls is AvroConverter
    conv = cls()
    conv.configure({"schema.registry.url": registry.url, "connect.meta.data": "false",
                    "enhanced.avro.schema.support": "true", "unknown.key": "ignored"}, False)
    text = conv.avro_data.writer(ORDER).text
    assert '"connect.' not in text
    assert conv.config().config_keys["schema.registry.url"].importance.value == "HIGH"
    with pytest.raises(ConfigError, match=r"schema\.registry\.url"):
        AvroConverter().configure({}, False)
    with pytest.raises(ConfigError, match=r"value\.subject\.name\.strategy"):
        AvroConverter().configure({"schema.registry.url": registry.url,
                                   "value.subject.name.strategy": "Nope"}, False)
    with pytest.raises(ConfigError, match=r"generalized\.sum\.type\.support"):
        AvroConverter().configure({"schema.registry.url": registry.url,
                                   "generalized.sum.type.support": "true"}, False)
