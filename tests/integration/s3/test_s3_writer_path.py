"""The partition writer on its own against moto_server: the objects of a stream of
records do not depend on how ``put()`` batched them, whichever path each record takes
(the bulk path for records of an open object, the per-record path for a new object, a
null value, a record the format rejects, a schema switch). And the stream's parts: a
part that fails inside ``commit()`` is kept and sent again by the next call."""

from __future__ import annotations

import gzip
import json
import time
from concurrent.futures import Future
from typing import Any

import pytest
from moto_process import FaultProxy

from connect.api import Schema, SinkRecord, TopicPartition
from connectors.s3.config import S3SinkSettings
from connectors.s3.formats import format_for
from connectors.s3.output_stream import S3OutputStream
from connectors.s3.partitioners import load_partitioner
from connectors.s3.storage import S3RetriableError, S3Storage
from connectors.s3.topic_partition_writer import TopicPartitionWriter

FLUSH = 40


def settings(moto: Any, bucket: str, **extra: str) -> S3SinkSettings:
    return S3SinkSettings.parse({
        "s3.bucket.name": bucket, "store.url": moto.url, "s3.region": "us-east-1",
        "aws.access.key.id": "x", "aws.secret.access.key": "x", "flush.size": str(FLUSH),
        "behavior.on.null.values": "ignore", **extra})


def records(kind: str) -> tuple[list[SinkRecord], set[int]]:
    """Records 0..99 of topic t, partition 0, and the offsets the format must reject."""
    out, bad = [], set()
    for i in range(100):
        value: Any = {"i": i, "pad": "p" * (i % 7)} if kind == "json" else b"v%d" % i
        schema = None
        if i % 17 == 5:
            value = None  # ignored (behavior.on.null.values=ignore)
        elif i % 23 == 7:
            # JSON: a schema amid schemaless records; bytes: a str value.
            if kind == "json":
                value, schema = "s", Schema.STRING_SCHEMA
            else:
                value = "not bytes"
            bad.add(i)
        elif kind == "json" and i == 61:
            value = {"i": i, "set": {1}}  # JSON has no sets
            bad.add(i)
        out.append(SinkRecord(topic="t", kafka_partition=0, kafka_offset=i,
                              value_schema=schema, value=value))
    return out, bad


def run(moto: Any, bucket: str, s: S3SinkSettings, recs: list[SinkRecord],
        batch: int) -> list[int]:
    moto.create_bucket(bucket)
    storage = S3Storage(s)
    reported: list[int] = []

    def report(record: SinkRecord, _exc: Exception) -> Future[None]:
        """As a worker's errant record reporter (errors.tolerance=all) does."""
        reported.append(record.kafka_offset)
        done: Future[None] = Future()
        done.set_result(None)
        return done

    writer = TopicPartitionWriter(TopicPartition("t", 0), storage, s, format_for(s),
                                  load_partitioner(s), report, lambda _ms: None)
    try:
        for start in range(0, len(recs), batch):
            writer.buffer.extend(recs[start:start + batch])
            writer.write()
            assert not writer.buffer
        writer.settle(block=True)
    finally:
        writer.close()
        storage.close()
    return reported


@pytest.mark.parametrize("kind, extra", [
    ("json", {"format.class": "JsonFormat"}),
    ("json", {"format.class": "JsonFormat", "s3.compression.type": "gzip"}),
    ("bytes", {"format.class": "ByteArrayFormat"}),
])
def test_objects_do_not_depend_on_how_records_arrive(moto, kind: str,
                                                     extra: dict[str, str]) -> None:
    recs, bad = records(kind)
    seen: dict[int, dict[str, bytes]] = {}
    tag = f"{kind}-{len(extra)}"
    for batch in (1, 7, 100):
        bucket = f"path-{tag}-{batch}"
        reported = run(moto, bucket, settings(moto, bucket, **extra), recs, batch)
        assert sorted(reported) == sorted(bad)
        seen[batch] = moto.objects(bucket)
    assert seen[1] == seen[7] == seen[100]
    # And the content is every written record once, in offset order.
    lines: list[bytes] = []
    for key in sorted(seen[1]):
        body = seen[1][key]
        if key.endswith(".gz"):
            body = gzip.decompress(body)
        lines += body.splitlines()
    kept = [r for r in recs if r.value is not None and r.kafka_offset not in bad]
    # Objects close every FLUSH written records; the last, partial, one stays open.
    committed = kept[:len(kept) // FLUSH * FLUSH]
    want = [json.dumps(r.value, separators=(",", ":")).encode() if kind == "json"
            else r.value for r in committed]
    assert lines == want


def test_a_part_failing_inside_commit_is_sent_again_by_the_next_commit(moto) -> None:
    moto.create_bucket("commit-parts")
    proxy = FaultProxy(moto.port)
    storage = S3Storage(S3SinkSettings.parse({
        "s3.bucket.name": "commit-parts", "store.url": proxy.url, "s3.region": "us-east-1",
        "aws.access.key.id": "x", "aws.secret.access.key": "x", "format.class": "JsonFormat",
        "flush.size": "1", "s3.part.retries": "1", "s3.retry.backoff.ms": "1"}))
    try:
        part = 5 * 1024 * 1024
        data = bytes(range(256)) * (part * 5 // 2 // 256)  # two and a half parts
        stream = S3OutputStream(storage, "k/obj", part)
        stream.write(data)  # no upload_full_parts(): commit() cuts and sends every part
        fail = {"on": True}
        proxy.rule = lambda m, p: 503 if fail["on"] and "partNumber=2" in p else None
        with pytest.raises(S3RetriableError, match="UploadPart 2"):
            stream.commit()
        assert moto.keys("commit-parts") == []
        fail["on"] = False
        stream.commit()
        assert moto.objects("commit-parts")["k/obj"] == data
    finally:
        storage.close()
        proxy.stop()


def test_an_idle_writer_waits_for_its_batch_so_the_commit_has_its_offset(moto) -> None:
    """``write(idle=True)`` (``put()`` got no records) waits for the batch being uploaded;
    a busy ``write()`` does not."""
    moto.create_bucket("idle")
    proxy = FaultProxy(moto.port)
    proxy.rule = lambda m, _p: time.sleep(0.5) if m == "PUT" else None  # slow, not failing
    s = S3SinkSettings.parse({
        "s3.bucket.name": "idle", "store.url": proxy.url, "s3.region": "us-east-1",
        "aws.access.key.id": "x", "aws.secret.access.key": "x", "format.class": "JsonFormat",
        "flush.size": "3"})
    storage = S3Storage(s)
    writer = TopicPartitionWriter(TopicPartition("t", 0), storage, s, format_for(s),
                                  load_partitioner(s), lambda _r, _e: None, lambda _ms: None)
    try:
        writer.buffer.extend(SinkRecord(topic="t", kafka_partition=0, kafka_offset=i,
                                        value={"i": i}) for i in range(3))
        writer.write()  # the batch is full: its object goes up on the upload thread
        assert writer.take_offset_to_commit() is None
        writer.write(idle=True)
        assert writer.take_offset_to_commit() == 3
        assert moto.keys("idle") == ["topics/t/partition=0/t+0+0000000000.json"]
    finally:
        writer.close()
        storage.close()
        proxy.stop()
