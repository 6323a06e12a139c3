"""Topics to objects in moto_server through the in-process worker: each format read back
(json, fastavro, pyarrow), the exact object keys, flush.size rotation."""

from __future__ import annotations

import gzip
import io
import json

import fastavro
import pyarrow.parquet as pq
import pytest
from conftest import s3_config, wait_for

pytestmark = pytest.mark.integration

SCHEMA = {"type": "struct", "name": "com.example.Order", "version": 1, "optional": False,
          "fields": [{"field": "id", "type": "int64", "optional": False},
                     {"field": "item", "type": "string", "optional": True},
                     {"field": "qty", "type": "int32", "optional": False}]}


def envelope(i: int, schema: dict = SCHEMA) -> dict:
    return {"schema": schema, "payload": {"id": i, "item": f"item-{i}", "qty": i % 7}}


def test_json_default_partitioner_exact_keys_and_flush_size(moto, stack) -> None:
    moto.create_bucket("json-b")
    s = stack()
    s.topic("orders", 2)
    s.produce("orders", [{"n": i} for i in range(7)], partition=0)
    s.produce("orders", [{"n": i} for i in range(100, 103)], partition=1)
    s.sink("s3-json", s3_config(moto, "json-b", topics="orders", **{
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "flush.size": "3", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"}))
    expected = ["topics/orders/partition=0/orders+0+0000000000.json",
                "topics/orders/partition=0/orders+0+0000000003.json",
                "topics/orders/partition=1/orders+1+0000000000.json"]
    wait_for(lambda: moto.keys("json-b") == expected, "three objects")
    objects = moto.objects("json-b")
    assert objects[expected[0]] == b'{"n":0}\n{"n":1}\n{"n":2}\n'
    assert objects[expected[1]] == b'{"n":3}\n{"n":4}\n{"n":5}\n'
    assert objects[expected[2]] == b'{"n":100}\n{"n":101}\n{"n":102}\n'
    # The 7th record waits for two more: its object does not exist, and the group's offset
    # stops at the last complete object.
    committed = wait_for(lambda: _committed(s, "s3-json", "orders", 0) == 6, "offset 6")
    assert committed
    assert s.state("s3-json") == ("RUNNING", ["RUNNING"])


def _committed(s, name: str, topic: str, partition: int) -> int | None:
    from core.backends import TopicPartition
    tp = TopicPartition(topic, partition)
    got = s.backend.fetch_offsets(f"connect-{name}", [tp]).get(tp)
    return None if got is None else got.offset


def test_json_gzip_and_bytearray(moto, stack) -> None:
    moto.create_bucket("gz-b")
    s = stack()
    s.topic("raw")
    s.produce("raw", [b"alpha", b"beta", b"gamma", b"delta"])
    s.sink("s3-gz", s3_config(moto, "gz-b", topics="raw", **{
        "format.class": "JsonFormat", "flush.size": "2", "s3.compression.type": "gzip",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"}))
    s.sink("s3-bytes", s3_config(moto, "gz-b", topics="raw", **{
        "topics.dir": "raw-bytes", "format.class":
        "io.confluent.connect.s3.format.bytearray.ByteArrayFormat", "flush.size": "4",
        "format.bytearray.extension": ".txt", "format.bytearray.separator": "|",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}))
    wait_for(lambda: len(moto.keys("gz-b")) == 3, "three objects")
    objects = moto.objects("gz-b")
    assert gzip.decompress(objects["topics/raw/partition=0/raw+0+0000000000.json.gz"]) == \
        b'"alpha"\n"beta"\n'
    assert gzip.decompress(objects["topics/raw/partition=0/raw+0+0000000002.json.gz"]) == \
        b'"gamma"\n"delta"\n'
    assert objects["raw-bytes/raw/partition=0/raw+0+0000000000.txt"] == \
        b"alpha|beta|gamma|delta|"


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_avro_and_parquet_read_back(moto, stack, fmt: str) -> None:
    bucket = f"{fmt}-b"
    moto.create_bucket(bucket)
    s = stack()
    s.topic("orders")
    s.produce("orders", [envelope(i) for i in range(10)])
    cls = {"avro": "io.confluent.connect.s3.format.avro.AvroFormat",
           "parquet": "io.confluent.connect.s3.format.parquet.ParquetFormat"}[fmt]
    s.sink("s3-" + fmt, s3_config(moto, bucket, topics="orders", **{
        "format.class": cls, "flush.size": "4",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true"}))
    ext = ".avro" if fmt == "avro" else ".snappy.parquet"
    expected = [f"topics/orders/partition=0/orders+0+{o:010d}{ext}" for o in (0, 4)]
    wait_for(lambda: moto.keys(bucket) == expected, "two objects")
    rows = []
    for key in expected:
        data = moto.objects(bucket)[key]
        if fmt == "avro":
            reader = fastavro.reader(io.BytesIO(data))
            assert reader.writer_schema["name"] == "com.example.Order"
            rows += list(reader)
        else:
            rows += pq.read_table(io.BytesIO(data)).to_pylist()
    assert rows == [{"id": i, "item": f"item-{i}", "qty": i % 7} for i in range(8)]


def test_avro_container_is_byte_identical_when_rewritten(moto, stack) -> None:
    """A replay rewrites an object with the same bytes (deterministic sync marker)."""
    moto.create_bucket("avro-det")
    s = stack()
    s.topic("orders")
    s.produce("orders", [envelope(i) for i in range(3)])
    config = s3_config(moto, "avro-det", topics="orders", **{
        "format.class": "AvroFormat", "flush.size": "3", "avro.codec": "deflate",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    s.sink("a1", config)
    key = "topics/orders/partition=0/orders+0+0000000000.avro"
    first = wait_for(lambda: moto.objects("avro-det").get(key), "the object")
    moto.client.delete_object(Bucket="avro-det", Key=key)
    s.sink("a2", config)  # a new group: consumes from the start again
    second = wait_for(lambda: moto.objects("avro-det").get(key), "the rewritten object")
    assert first == second
    assert [r["id"] for r in fastavro.reader(io.BytesIO(second))] == [0, 1, 2]
    assert json.loads(fastavro.reader(io.BytesIO(second)).metadata["avro.schema"])
