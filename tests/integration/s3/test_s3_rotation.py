"""Rotation rules and partitioners end to end: rotate.interval.ms on record time with the
HourlyPartitioner, FieldPartitioner directories, schema-change rotation (NONE and
BACKWARD), multipart upload of an object larger than one part, null values."""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from conftest import s3_config, wait_for

pytestmark = pytest.mark.integration

JSON_SCHEMAS = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true"}
SCHEMALESS = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}
T0 = 1710061200000  # 2024-03-10T09:00:00Z


def lines(data: bytes) -> list:
    return [json.loads(x) for x in data.decode().splitlines()]


def test_rotate_interval_on_record_time_with_hourly_partitioner(moto, stack) -> None:
    moto.create_bucket("hourly")
    s = stack()
    s.topic("ev")
    offsets_ts = [T0, T0 + 10_000, T0 + 59_999, T0 + 60_000, T0 + 3_600_000,
                  T0 + 3_600_001, T0 + 3_670_000]
    s.produce("ev", [{"i": i} for i in range(len(offsets_ts))], timestamps=offsets_ts)
    s.sink("hourly", s3_config(moto, "hourly", topics="ev", **SCHEMALESS, **{
        "format.class": "JsonFormat", "flush.size": "100", "rotate.interval.ms": "60000",
        "partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner",
        "locale": "en-US", "timezone": "UTC", "timestamp.extractor": "Record"}))
    h = "topics/ev/year=2024/month=03/day=10"
    expected = {f"{h}/hour=09/ev+0+0000000000.json": [0, 1, 2],
                f"{h}/hour=09/ev+0+0000000003.json": [3],
                f"{h}/hour=10/ev+0+0000000004.json": [4, 5]}
    wait_for(lambda: moto.keys("hourly") == sorted(expected), "three objects")
    objects = moto.objects("hourly")
    assert {k: [r["i"] for r in lines(v)] for k, v in objects.items()} == expected


def test_field_partitioner_directories_and_shared_rotation(moto, stack) -> None:
    moto.create_bucket("fields")
    s = stack()
    s.topic("orders")
    values = [{"region": r, "n": i} for i, r in enumerate(["eu", "us", "eu", "us", "eu"])]
    s.produce("orders", values)
    s.sink("fields", s3_config(moto, "fields", topics="orders", **SCHEMALESS, **{
        "format.class": "JsonFormat", "flush.size": "4",
        "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
        "partition.field.name": "region"}))
    # flush.size counts the partition's records over all its open objects (Confluent).
    expected = {"topics/orders/region=eu/orders+0+0000000000.json": [0, 2],
                "topics/orders/region=us/orders+0+0000000001.json": [1, 3]}
    wait_for(lambda: moto.keys("fields") == sorted(expected), "two objects")
    assert {k: [r["n"] for r in lines(v)] for k, v in moto.objects("fields").items()} == \
        expected


def _schema(version: int) -> dict:
    fields = [{"field": "id", "type": "int32", "optional": False}]
    if version == 2:
        fields.append({"field": "note", "type": "string", "optional": True})
    return {"type": "struct", "name": "ex.Rec", "version": version, "optional": False,
            "fields": fields}


def _rec(i: int, version: int) -> dict:
    payload = {"id": i} if version == 1 else {"id": i, "note": f"n{i}"}
    return {"schema": _schema(version), "payload": payload}


@pytest.mark.parametrize("compat, expected", [
    # NONE rotates on every change; BACKWARD only when a newer version arrives, and
    # projects the older record 3 onto v2 (note is null).
    ("NONE", {0: ([0, 1], 1), 2: ([2], 2), 3: ([3], 1), 4: ([4], 2), 5: ([5, 6, 7], 1)}),
    ("BACKWARD", {0: ([0, 1], 1), 2: ([2, 3, 4], 2), 5: ([5, 6, 7], 1)}),
])
def test_schema_change_rotation(moto, stack, compat: str, expected: dict) -> None:
    bucket = f"schemas-{compat.lower()}"
    moto.create_bucket(bucket)
    s = stack()
    s.topic("recs")
    versions = [1, 1, 2, 1, 2, 1, 1, 1]
    s.produce("recs", [_rec(i, v) for i, v in enumerate(versions)])
    s.sink(bucket, s3_config(moto, bucket, topics="recs", **JSON_SCHEMAS, **{
        "format.class": "AvroFormat", "flush.size": "3", "schema.compatibility": compat}))
    keys = [f"topics/recs/partition=0/recs+0+{o:010d}.avro" for o in expected]
    wait_for(lambda: set(keys) <= set(moto.keys(bucket)), f"objects {list(expected)}")
    objects = moto.objects(bucket)
    for start, (ids, version) in expected.items():
        reader = fastavro.reader(io.BytesIO(objects[keys[list(expected).index(start)]]))
        rows = list(reader)
        assert [r["id"] for r in rows] == ids
        assert len(reader.writer_schema["fields"]) == version
        if version == 2:
            assert [r["note"] for r in rows] == [None if i == 3 else f"n{i}" for i in ids]


def test_multipart_upload_of_an_object_larger_than_one_part(moto, stack) -> None:
    moto.create_bucket("big")
    s = stack()
    s.topic("big")
    n = 6000  # ~6.2 MB: two 5 MiB parts
    s.produce("big", [{"i": i, "pad": "x" * 1000} for i in range(n)])
    s.sink("big", s3_config(moto, "big", topics="big", **SCHEMALESS, **{
        "format.class": "JsonFormat", "flush.size": str(n), "s3.part.size": "5242880",
        "consumer.override.max.poll.records": "500"}))
    key = "topics/big/partition=0/big+0+0000000000.json"
    wait_for(lambda: moto.keys("big") == [key], "the object", timeout=60)
    head = moto.client.head_object(Bucket="big", Key=key)
    assert head["ETag"].strip('"').endswith("-2")  # completed from two parts
    assert [r["i"] for r in lines(moto.objects("big")[key])] == list(range(n))
    assert moto.client.list_multipart_uploads(Bucket="big").get("Uploads", []) == []


def test_null_values_ignore_write_and_fail(moto, stack) -> None:
    moto.create_bucket("nulls")
    s = stack()
    s.topic("n")
    s.produce("n", [{"a": 1}, None, {"a": 2}, None])
    base = {**SCHEMALESS, "topics": "n", "format.class": "JsonFormat", "flush.size": "2"}
    s.sink("ignore", s3_config(moto, "nulls", **base, **{
        "topics.dir": "ignore", "behavior.on.null.values": "ignore"}))
    s.sink("write", s3_config(moto, "nulls", **base, **{
        "topics.dir": "write", "behavior.on.null.values": "write"}))
    s.sink("fail", s3_config(moto, "nulls", **base, **{"topics.dir": "fail"}))
    wait_for(lambda: "ignore/n/partition=0/n+0+0000000000.json" in moto.keys("nulls"),
             "the ignore object")
    wait_for(lambda: s.state("fail")[1] == ["FAILED"], "the fail task to fail")
    trace = s.herder.connector_status("fail").tasks[0].trace or ""
    assert "n-0@1" in trace and "behavior.on.null.values=fail" in trace
    wait_for(lambda: len(moto.keys("nulls", "write/")) == 4, "the write objects")
    objects = moto.objects("nulls")
    assert lines(objects["ignore/n/partition=0/n+0+0000000000.json"]) == [{"a": 1}, {"a": 2}]
    # Null values go to the tombstone directory, as Confluent's 'write' does; the two
    # objects rotate together after flush.size records.
    assert objects["write/n/partition=0/n+0+0000000000.json"] == b'{"a":1}\n'
    assert objects["write/n/tombstone/n+0+0000000001.json"] == b"null\n"
    assert objects["write/n/partition=0/n+0+0000000002.json"] == b'{"a":2}\n'
    assert objects["write/n/tombstone/n+0+0000000003.json"] == b"null\n"
    assert moto.keys("nulls", "fail/") == []


def test_scheduled_rotation_commits_idle_partitions_on_the_wall_clock(moto, stack) -> None:
    """rotate.schedule.interval.ms commits without new data (and is not exactly-once)."""
    moto.create_bucket("scheduled")
    s = stack()
    s.topic("idle")
    s.produce("idle", [{"i": i} for i in range(3)])
    s.sink("scheduled", s3_config(moto, "scheduled", topics="idle", **SCHEMALESS, **{
        "format.class": "JsonFormat", "flush.size": "1000",
        "rotate.schedule.interval.ms": "1000", "timezone": "UTC"}))
    key = "topics/idle/partition=0/idle+0+0000000000.json"
    wait_for(lambda: moto.keys("scheduled") == [key], "the scheduled commit", timeout=20)
    assert [r["i"] for r in lines(moto.objects("scheduled")[key])] == [0, 1, 2]
