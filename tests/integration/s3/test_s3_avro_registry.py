"""Avro objects from records that AvroConverter read: Confluent's serializer writes the
topic with a registered schema, the S3 sink (``value.converter=AvroConverter``) writes
AvroFormat objects, and the files carry the registered schema (same names, fields, types
and logical types) and the records that went in."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import sys
from pathlib import Path

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from conftest import s3_config, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "schema_registry"))
from sr_serde_helpers import running_registry

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "record", "name": "Order", "namespace": "com.example", "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"},
            {"name": "tier", "type": ["null", "string"], "default": None}]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
                                   "precision": 10, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None}]}


def order(i: int) -> dict:
    return {"id": i, "customer": {"name": f"c{i}", "tier": "gold" if i % 2 else None},
            "tags": [f"t{i}"], "attrs": {"n": i}, "price": decimal.Decimal(f"{i}.25"),
            "at": dt.datetime(2024, 3, 10, 9, i, tzinfo=dt.UTC), "note": None}


def test_avro_files_carry_the_registered_schema(moto, stack, tmp_path) -> None:
    moto.create_bucket("registered")
    with running_registry(tmp_path / "registry") as registry:
        client = SchemaRegistryClient({"url": registry.url})
        serializer = AvroSerializer(client, json.dumps(SCHEMA))
        ctx = SerializationContext("orders", MessageField.VALUE)
        s = stack()
        s.topic("orders")
        s.produce("orders", [serializer(order(i), ctx) for i in range(4)])
        s.sink("avro", s3_config(moto, "registered", topics="orders", **{
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry.url,
            "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
            "flush.size": "4"}))
        key = "topics/orders/partition=0/orders+0+0000000000.avro"
        data = wait_for(lambda: moto.objects("registered").get(key), "the object")
    reader = fastavro.reader(io.BytesIO(data))
    written = reader.writer_schema
    canonical = fastavro.schema.to_parsing_canonical_form
    assert canonical(written) == canonical(fastavro.parse_schema(SCHEMA))
    fields = {f["name"]: f["type"] for f in written["fields"]}
    assert fields["price"]["logicalType"] == "decimal" and fields["price"]["scale"] == 2
    assert fields["at"]["logicalType"] == "timestamp-millis"
    assert list(reader) == [order(i) for i in range(4)]
