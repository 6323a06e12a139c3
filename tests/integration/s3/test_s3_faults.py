"""Bad input and faults: a missing bucket (validate names it; a bucket gone at runtime fails
the task naming it), records the format cannot write (DLQ or task failure with the
record's coordinates), S3 answering 500/503 or not answering within the read timeout
through a fault proxy (retries, nothing lost, nothing duplicated), and the position
recovered from the bucket when the group's offsets are lost."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import s3_config, wait_for
from moto_process import FaultProxy, Stall

from connect.runtime.errors import BadRequestError
from core.backends import OffsetSpec, TopicPartition

pytestmark = pytest.mark.integration

SCHEMALESS = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}


def test_missing_bucket_is_named_by_validate_and_create(moto, stack) -> None:
    s = stack()
    s.topic("t")
    config = s3_config(moto, "no-such-bucket", topics="t", name="missing", **SCHEMALESS,
                       **{"format.class": "JsonFormat", "flush.size": "1"})
    infos = s.herder.validate_connector_config(config)
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    assert infos["error_count"] == 1
    assert "no-such-bucket" in errors["s3.bucket.name"][0]
    assert "NoSuchBucket" in errors["s3.bucket.name"][0]
    with pytest.raises(BadRequestError, match="no-such-bucket"):
        s.sink("missing", config)


def test_bad_config_names_the_key(moto, stack) -> None:
    s = stack()
    infos = s.herder.validate_connector_config(s3_config(moto, "x", topics="t", name="x", **{
        "format.class": "CsvFormat", "flush.size": "0"}))
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]
              if c["value"]["errors"]}
    assert set(errors) == {"format.class", "flush.size"}
    assert "secret" not in json.dumps(infos).lower() or "[hidden]" in json.dumps(infos)


def test_bucket_deleted_at_runtime_fails_the_task_naming_it(moto, stack) -> None:
    moto.create_bucket("going")
    s = stack()
    s.topic("g")
    s.sink("going", s3_config(moto, "going", topics="g", **SCHEMALESS, **{
        "format.class": "JsonFormat", "flush.size": "2"}))
    wait_for(lambda: s.state("going")[1] == ["RUNNING"], "the task")
    moto.client.delete_bucket(Bucket="going")
    s.produce("g", [{"i": 1}, {"i": 2}])
    wait_for(lambda: s.state("going")[1] == ["FAILED"], "the task to fail")
    trace = s.herder.connector_status("going").tasks[0].trace or ""
    assert "bucket 'going'" in trace and "NoSuchBucket" in trace


def test_unwritable_records_go_to_the_dlq(moto, stack) -> None:
    moto.create_bucket("dlq-b")
    s = stack()
    s.topic("p")
    schema = {"type": "struct", "name": "R", "optional": False,
              "fields": [{"field": "id", "type": "int32", "optional": False}]}
    values = [{"schema": schema, "payload": {"id": 0}},
              {"schema": {"type": "string", "optional": False}, "payload": "not a struct"},
              {"schema": schema, "payload": {"id": 2}},
              {"schema": schema, "payload": {"id": 3}}]
    s.produce("p", values)
    s.sink("dlq", s3_config(moto, "dlq-b", topics="p", **{
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "format.class": "ParquetFormat", "flush.size": "2", "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "s3-dlq",
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true"}))
    import io

    import pyarrow.parquet as pq
    # The string record is a schema change: it rotates [0] out, then fails and is
    # reported; 2 and 3 share an object.
    expected = {"topics/p/partition=0/p+0+0000000000.snappy.parquet": [0],
                "topics/p/partition=0/p+0+0000000002.snappy.parquet": [2, 3]}
    wait_for(lambda: moto.keys("dlq-b") == sorted(expected), "two objects")
    got = {k: [r["id"] for r in pq.read_table(io.BytesIO(v)).to_pylist()]
           for k, v in moto.objects("dlq-b").items()}
    assert got == expected
    tp = TopicPartition("s3-dlq", 0)
    wait_for(lambda: s.backend.list_offsets([tp], OffsetSpec.LATEST)[tp] == 1, "a DLQ record")
    dead = s.backend.fetch({tp: 0}, max_wait_ms=100)[tp].records[0]
    assert json.loads(dead.value)["payload"] == "not a struct"
    headers = dict(dead.headers)
    assert headers["__connect.errors.topic"] == b"p"
    assert headers["__connect.errors.offset"] == b"1"
    assert s.state("dlq") == ("RUNNING", ["RUNNING"])


def test_unwritable_record_without_tolerance_fails_with_coordinates(moto, stack) -> None:
    moto.create_bucket("strict")
    s = stack()
    s.topic("q")
    s.produce("q", [b"\x00\x01", b"ok"])
    s.sink("strict", s3_config(moto, "strict", topics="q", **{
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "format.class": "ByteArrayFormat", "flush.size": "1"}))
    wait_for(lambda: s.state("strict")[1] == ["FAILED"], "the task to fail")
    trace = s.herder.connector_status("strict").tasks[0].trace or ""
    assert "q-0@0" in trace and "ByteArrayFormat writes bytes" in trace


def test_s3_500_and_503_are_retried_and_nothing_is_lost(moto, stack) -> None:
    moto.create_bucket("flaky")
    proxy = FaultProxy(moto.port)
    try:
        count = {"n": 0}

        def every_third_write(method: str, path: str) -> int | None:
            if method in ("PUT", "POST"):
                count["n"] += 1
                if count["n"] % 3 == 0:
                    return 503 if count["n"] % 2 else 500
            return None

        proxy.rule = every_third_write
        s = stack()
        s.topic("f")
        n = 300
        s.produce("f", [{"i": i} for i in range(n)])
        config = s3_config(moto, "flaky", topics="f", **SCHEMALESS, **{
            "store.url": proxy.url, "format.class": "JsonFormat", "flush.size": "20"})
        s.sink("flaky", config)
        wait_for(lambda: len(moto.keys("flaky")) == n // 20, "15 objects", timeout=60)
        # An outage longer than the request retries: the writer keeps its state and
        # tries again after retry.backoff.ms; the task stays up.
        proxy.rule = lambda m, p: 503
        s.produce("f", [{"i": i} for i in range(n, n + 40)])
        wait_for(lambda: proxy.injected > 20, "the outage to be hit")
        assert s.state("flaky")[1] == ["RUNNING"]
        proxy.rule = lambda m, p: None
        wait_for(lambda: len(moto.keys("flaky")) == (n + 40) // 20, "17 objects", timeout=60)
        got = []
        for _key, data in sorted(moto.objects("flaky").items()):
            got += [json.loads(line)["i"] for line in data.decode().splitlines()]
        assert got == list(range(n + 40))
        assert proxy.injected > 0
    finally:
        proxy.stop()


def _read_back(moto, bucket: str) -> list[int]:
    got: list[int] = []
    for _key, data in sorted(moto.objects(bucket).items()):
        got += [json.loads(line)["i"] for line in data.decode().splitlines()]
    return got


def test_s3_read_timeouts_are_retried_and_nothing_is_lost(moto, stack, caplog) -> None:
    """S3 accepting a request and not answering: the proxy holds chosen PUTs for 2 s and
    drops them, past the 0.3 s ``s3.read.timeout.ms``. Each timeout is retried; an outage
    longer than the request retries leaves the task RUNNING with its writer retrying after
    ``retry.backoff.ms``; once S3 answers again every record is in exactly one object. The
    stalls are bounded by the read timeout, not by the stall (the proxy thread waits, the
    task does not)."""
    caplog.set_level(logging.WARNING, logger="connectors.s3.storage")
    moto.create_bucket("stalls")
    proxy = FaultProxy(moto.port)
    try:
        count = {"n": 0}

        def every_second_write(method: str, path: str) -> Stall | None:
            if method in ("PUT", "POST"):
                count["n"] += 1
                if count["n"] % 2 == 0:
                    return Stall(2.0)
            return None

        proxy.rule = every_second_write
        s = stack()
        s.topic("st")
        n = 100
        s.produce("st", [{"i": i} for i in range(n)])
        s.sink("stalls", s3_config(moto, "stalls", topics="st", **SCHEMALESS, **{
            "store.url": proxy.url, "format.class": "JsonFormat", "flush.size": "20",
            "s3.read.timeout.ms": "300", "s3.part.retries": "2"}))
        wait_for(lambda: len(moto.keys("stalls")) == n // 20, "5 objects", timeout=60)
        assert proxy.stalled >= 2  # every second write of the 5 PUTs and their retries
        # Every PUT stalls: each request spends its 3 attempts, the writer keeps its state
        # and tries again after retry.backoff.ms (200 ms here), the task stays up.
        before = proxy.stalled
        proxy.rule = lambda m, p: Stall(2.0) if m in ("PUT", "POST") else None
        s.produce("st", [{"i": i} for i in range(n, n + 40)])
        wait_for(lambda: proxy.stalled >= before + 6, "two rounds of request retries")
        assert s.state("stalls") == ("RUNNING", ["RUNNING"])
        proxy.rule = lambda m, p: None
        wait_for(lambda: len(moto.keys("stalls")) == (n + 40) // 20, "7 objects", timeout=60)
        assert _read_back(moto, "stalls") == list(range(n + 40))
        timeouts = [r.getMessage() for r in caplog.records if "ReadTimeoutError" in
                    r.getMessage()]
        assert len(timeouts) >= proxy.stalled // 2, caplog.text[-2000:]
    finally:
        proxy.stop()


def test_offsets_recovered_from_storage_when_the_group_has_none(moto, stack) -> None:
    moto.create_bucket("recover")
    s = stack()
    s.topic("r")
    s.produce("r", [{"i": i} for i in range(10)])
    config = s3_config(moto, "recover", topics="r", **SCHEMALESS, **{
        "format.class": "JsonFormat", "flush.size": "3",
        "offsets.recovery.from.storage": "true"})
    s.sink("first", config)
    prefix = "topics/r/partition=0/r+0+"
    wait_for(lambda: len(moto.keys("recover")) == 3, "three objects")
    s.herder.delete_connector("first")
    # Another connector name is another consumer group, without offsets: as after the
    # group's offsets were lost. Delete the oldest object: were history rewritten, it
    # would come back.
    moto.client.delete_object(Bucket="recover", Key=prefix + "0000000000.json")
    s.produce("r", [{"i": i} for i in range(10, 15)])
    s.sink("second", config)
    wait_for(lambda: moto.keys("recover")[-1] == prefix + "0000000012.json", "object 12")
    assert moto.keys("recover") == [prefix + f"{o:010d}.json" for o in (3, 6, 9, 12)]
    got = []
    for data in moto.objects("recover").values():
        got += [json.loads(line)["i"] for line in data.decode().splitlines()]
    assert got == list(range(3, 15))


def test_multipart_part_failing_all_retries_is_uploaded_again_by_the_next_call(moto) -> None:
    """The stream's retry contract, on a real multipart upload through the fault proxy:
    a part whose retries are spent raises ``S3RetriableError``; calling again uploads it
    and the completed object holds every byte once. An aborted upload leaves nothing."""
    from connectors.s3.config import S3SinkSettings
    from connectors.s3.output_stream import S3OutputStream
    from connectors.s3.storage import S3RetriableError, S3Storage

    moto.create_bucket("parts")
    proxy = FaultProxy(moto.port)
    storage = S3Storage(S3SinkSettings.parse({
        "s3.bucket.name": "parts", "store.url": proxy.url, "s3.region": "us-east-1",
        "aws.access.key.id": "x", "aws.secret.access.key": "x", "format.class": "JsonFormat",
        "flush.size": "1", "s3.part.retries": "1", "s3.retry.backoff.ms": "1"}))
    try:
        part = 5 * 1024 * 1024
        data = bytes(range(256)) * (part * 2 // 256 + 1000)
        stream = S3OutputStream(storage, "k/obj", part)
        fail = {"on": True}
        proxy.rule = lambda m, p: 503 if fail["on"] and "partNumber=2" in p else None
        written = 0
        with pytest.raises(S3RetriableError, match="UploadPart 2"):
            while written < len(data):
                stream.write(data[written:written + 100_000])
                written = min(written + 100_000, len(data))
                stream.upload_full_parts()
            stream.commit()
        assert proxy.injected == 2  # the first try and its one retry
        assert moto.keys("parts") == []
        fail["on"] = False
        stream.write(data[written:])
        stream.commit()
        assert moto.objects("parts")["k/obj"] == data
        aborted = S3OutputStream(storage, "k/aborted", part)
        aborted.write(data)
        aborted.upload_full_parts()
        aborted.abort()
        assert moto.keys("parts") == ["k/obj"]
        assert moto.client.list_multipart_uploads(Bucket="parts").get("Uploads", []) == []
    finally:
        storage.close()
        proxy.stop()


def test_expired_credentials_fail_the_task_at_once_naming_bucket_and_error(moto, stack) -> None:
    moto.create_bucket("expiring")
    proxy = FaultProxy(moto.port)
    try:
        s = stack()
        s.topic("e")
        s.sink("expiring", s3_config(moto, "expiring", topics="e", **SCHEMALESS, **{
            "store.url": proxy.url, "format.class": "JsonFormat", "flush.size": "1"}))
        wait_for(lambda: s.state("expiring")[1] == ["RUNNING"], "the task")
        puts: list[str] = []

        def expired(method: str, path: str) -> tuple[int, str]:
            if method == "PUT":
                puts.append(path)
            return 400, "ExpiredToken"

        proxy.rule = expired
        s.produce("e", [{"i": 1}])
        wait_for(lambda: s.state("expiring")[1] == ["FAILED"], "the task to fail")
        trace = s.herder.connector_status("expiring").tasks[0].trace or ""
        assert "bucket 'expiring'" in trace and "ExpiredToken" in trace
        # The PutObject was not retried: retrying cannot renew credentials (the worker's
        # restart of the failed task may HEAD the bucket again, which is not a PUT).
        assert len(puts) == 1
    finally:
        proxy.stop()


def test_an_object_much_larger_than_a_part_streams_in_bounded_memory(moto) -> None:
    """40 MB into one object through the JSON writer: Python's allocations peak near two
    parts (the buffer and the part in flight), not near the object's size."""
    import tracemalloc

    from connect.api import SinkRecord
    from connectors.s3.config import S3SinkSettings
    from connectors.s3.formats import format_for
    from connectors.s3.output_stream import S3OutputStream
    from connectors.s3.storage import S3Storage

    moto.create_bucket("bounded")
    part = 5 * 1024 * 1024
    settings = S3SinkSettings.parse({
        "s3.bucket.name": "bounded", "store.url": moto.url, "s3.region": "us-east-1",
        "aws.access.key.id": "x", "aws.secret.access.key": "x", "format.class": "JsonFormat",
        "flush.size": "1", "s3.part.size": str(part)})
    storage = S3Storage(settings)
    value = {"pad": "y" * 4000}
    total = 40 * 1024 * 1024 // 4011  # {"pad":"y...y"} and a newline
    try:
        stream = S3OutputStream(storage, "big/obj.json", part)
        first = SinkRecord(topic="t", kafka_partition=0, kafka_offset=0, value=value)
        writer = format_for(settings).writer(stream, first)
        tracemalloc.start()
        for i in range(total):
            writer.write(SinkRecord(topic="t", kafka_partition=0, kafka_offset=i, value=value))
            writer.upload_full_parts()
        writer.commit()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        size = moto.client.head_object(Bucket="bounded", Key="big/obj.json")["ContentLength"]
        assert size == total * 4011
        assert peak < 4 * part, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.0f} MB object"
    finally:
        storage.close()
