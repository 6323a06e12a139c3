"""``valueFormat`` avro / json-schema through a real Ferry Schema Registry (on the broker's
log): records written by Confluent's own serializers decode into typed columns (old
records resolved against the latest schema), writes encode so that Confluent's
deserializer reads them, and a registry that is down fails at planning time."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from broker_process import free_port

from core.backends import ProducerRecord, TopicPartition, open_backend

V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
    {"name": "amount", "type": "double"}]}
V2 = {**V1, "fields": [*V1["fields"],
                       {"name": "note", "type": ["null", "string"], "default": None}]}


@pytest.fixture(scope="module")
def registry_url(log_url: str) -> Iterator[str]:
    from schema_registry.service import RegistryService

    svc = RegistryService(log_url, listen=f"127.0.0.1:{free_port()}",
                          config={"kafkagroup.heartbeat.interval.ms": "500"})
    svc.start(wait_ready=30)
    try:
        assert svc.ready
        yield svc.url
    finally:
        svc.stop()


def _confluent_serializer(registry_url: str, schema: dict):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer

    client = SchemaRegistryClient({"url": registry_url})
    return AvroSerializer(client, json.dumps(schema))


def test_avro_values_decode_into_typed_columns(spark, log_url, registry_url):
    from confluent_kafka.serialization import MessageField, SerializationContext

    ctx = SerializationContext("orders-avro", MessageField.VALUE)
    with open_backend(log_url) as backend:
        backend.create_topic("orders-avro", 1)
        v1 = _confluent_serializer(registry_url, V1)
        v2 = _confluent_serializer(registry_url, V2)
        backend.produce("orders-avro", [
            ProducerRecord(b"1", v1({"id": 1, "customer": "ann", "amount": 9.5}, ctx)),
            ProducerRecord(b"2", v2({"id": 2, "customer": "bob", "amount": 1.25,
                                     "note": "gift"}, ctx)),
            ProducerRecord(b"3", None)])
    df = (spark.read.format("ferry").option("log", log_url).option("subscribe", "orders-avro")
          .option("valueFormat", "avro").option("schema.registry.url", registry_url).load())
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,amount:double,note:string>")
    rows = df.orderBy("offset").select("value.*").collect()
    assert [tuple(r) for r in rows] == [(1, "ann", 9.5, None), (2, "bob", 1.25, "gift"),
                                        (None, None, None, None)]
    old = (spark.read.format("ferry").option("log", log_url).option("subscribe", "orders-avro")
           .option("valueFormat", "avro").option("valueSchemaVersion", "1")
           .option("schema.registry.url", registry_url).load())
    assert old.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,amount:double>")


def test_avro_write_is_read_by_confluents_deserializer(spark, log_url, registry_url):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    with open_backend(log_url) as backend:
        backend.create_topic("orders-out", 1)
    _confluent_serializer(registry_url, V1)(  # registers orders-out-value
        {"id": 0, "customer": "x", "amount": 0.0},
        SerializationContext("orders-out", MessageField.VALUE))
    df = spark.createDataFrame([(7, "cy", 3.0), (8, "di", 4.5)],
                               "id long, customer string, amount double")
    (df.selectExpr("struct(id, customer, amount) AS value").write.format("ferry")
     .option("log", log_url).option("topic", "orders-out").option("valueFormat", "avro")
     .option("schema.registry.url", registry_url).mode("append").save())
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext("orders-out", MessageField.VALUE)
    with open_backend(log_url) as backend:
        tp = TopicPartition("orders-out", 0)
        records = backend.fetch({tp: 0})[tp].records
    assert sorted((d["id"], d["customer"], d["amount"])
                  for d in (deserialize(r.value, ctx) for r in records)) == [
        (7, "cy", 3.0), (8, "di", 4.5)]


def test_json_schema_values(spark, log_url, registry_url):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema = {"type": "object", "properties": {"sku": {"type": "string"},
                                               "qty": {"type": "integer"}}}
    serialize = JSONSerializer(json.dumps(schema), SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext("stock", MessageField.VALUE)
    with open_backend(log_url) as backend:
        backend.create_topic("stock", 1)
        backend.produce("stock", [ProducerRecord(None, serialize({"sku": "a", "qty": 3}, ctx)),
                                  ProducerRecord(None, b'{"sku": "b", "qty": 4}')])
    base = (spark.read.format("ferry").option("log", log_url).option("subscribe", "stock")
            .option("schema.registry.url", registry_url))
    rows = base.option("valueFormat", "json").load().select("value.*").collect()
    assert sorted(tuple(r) for r in rows) == [("a", 3), ("b", 4)]
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException, match="mode=PERMISSIVE"):
        base.option("valueFormat", "json-schema").load().collect()
    rows = (base.option("valueFormat", "json-schema").option("mode", "PERMISSIVE").load()
            .select("value").collect())
    assert sorted((r.value is None) for r in rows) == [False, True]


def test_registry_down_fails_at_planning(spark, log_url):
    from pyspark.errors import PySparkException

    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PySparkException) as info:
        (spark.read.format("ferry").option("log", log_url).option("subscribe", "stock")
         .option("valueFormat", "avro").option("schema.registry.url", down).load())
    assert "option 'schema.registry.url'" in str(info.value)
    assert "cannot be reached" in str(info.value)
