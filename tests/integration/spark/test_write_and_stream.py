"""Writes (batch and streaming) read back, and streaming reads through a checkpoint: a
query stopped and restarted continues exactly where it stopped (no record lost or
repeated in Spark's exactly-once file sink), ``maxOffsetsPerTrigger`` bounds batches, and
new partitions are picked up."""

from __future__ import annotations

import json

import pytest

from core.backends import ProducerRecord, TopicPartition, open_backend, partition_for_key


def _produce(log_url: str, topic: str, start: int, count: int, partitions: int = 2) -> None:
    with open_backend(log_url) as backend:
        if topic not in backend.list_topics():
            backend.create_topic(topic, partitions)
        backend.produce(topic, [ProducerRecord(f"k{i}".encode(), f"v{i}".encode())
                                for i in range(start, start + count)])


def test_batch_write_then_read_back(spark, log_url):
    from pyspark.sql import functions as F

    with open_backend(log_url) as backend:
        backend.create_topic("written", 3)
    rows = [(f"key-{i}", f"value-{i}", [("h", f"{i}".encode())]) for i in range(200)]
    df = spark.createDataFrame(rows, "key string, value string, "
                                     "headers array<struct<key:string,value:binary>>")
    df.write.format("ferry").option("log", log_url).option("topic", "written") \
        .mode("append").save()
    back = (spark.read.format("ferry").option("log", log_url).option("subscribe", "written")
            .option("includeHeaders", "true").load()
            .select(F.col("key").cast("string").alias("k"),
                    F.col("value").cast("string").alias("v"),
                    "partition", "headers").collect())
    assert sorted((r.k, r.v) for r in back) == sorted((k, v) for k, v, _ in rows)
    for r in back:  # Kafka's partitioner: murmur2 of the key
        assert r.partition == partition_for_key(r.k.encode(), 3)
        assert [(h.key, bytes(h.value)) for h in r.headers] == [("h", r.k[4:].encode())]


def test_write_topic_and_partition_columns_and_tombstones(spark, log_url):
    with open_backend(log_url) as backend:
        backend.create_topic("routed-a", 2)
        backend.create_topic("routed-b", 2)
    df = spark.createDataFrame(
        [("routed-a", 1, b"k1", b"v1"), ("routed-b", 0, b"k2", None), ("routed-a", 0, None, b"v3")],
        "topic string, partition int, key binary, value binary")
    df.write.format("ferry").option("log", log_url).mode("append").save()
    with open_backend(log_url) as backend:
        a0 = backend.fetch({TopicPartition("routed-a", 0): 0})[TopicPartition("routed-a", 0)]
        a1 = backend.fetch({TopicPartition("routed-a", 1): 0})[TopicPartition("routed-a", 1)]
        b0 = backend.fetch({TopicPartition("routed-b", 0): 0})[TopicPartition("routed-b", 0)]
    assert [(r.key, r.value) for r in a0.records] == [(None, b"v3")]
    assert [(r.key, r.value) for r in a1.records] == [(b"k1", b"v1")]
    assert [(r.key, r.value) for r in b0.records] == [(b"k2", None)]


@pytest.mark.parametrize(("frame", "options", "message"), [
    ("key string", {"topic": "written"}, "needs a 'value' column"),
    ("value string", {}, "set the 'topic' option or give a 'topic' column"),
    ("value int", {"topic": "written"}, "column 'value' must be binary or string"),
    ("value string", {"topic": "written", "acks": "all"}, "unknown option 'acks'"),
])
def test_bad_writes_fail_before_any_task(spark, log_url, frame, options, message):
    from pyspark.errors import PySparkException

    df = spark.createDataFrame([], frame)
    writer = df.write.format("ferry").option("log", log_url).mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    with pytest.raises(PySparkException) as info:
        writer.save()
    assert message in str(info.value)


def _run_available_now(spark, log_url, topic, checkpoint, out, max_per_trigger=None):
    reader = (spark.readStream.format("ferry").option("log", log_url)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    if max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
    query = (reader.load().selectExpr("partition", "offset", "CAST(value AS STRING) AS v")
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
        assert query.exception() is None
        return [p["numInputRows"] for p in query.recentProgress]
    finally:
        query.stop()


def test_stream_restarts_from_checkpoint_exactly(spark, log_url, tmp_path):
    topic = "stream-restart"
    _produce(log_url, topic, 0, 300)
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    sizes = _run_available_now(spark, log_url, topic, checkpoint, out, max_per_trigger=100)
    assert sum(sizes) == 300 and max(sizes) <= 101  # each partition's share rounds up
    offsets_file = max((p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()),
                       key=lambda p: int(p.name))
    last = offsets_file.read_text().splitlines()[-1]
    per_partition = [0, 0]
    for i in range(300):
        per_partition[partition_for_key(f"k{i}".encode(), 2)] += 1
    assert json.loads(last) == {topic: {"0": per_partition[0], "1": per_partition[1]}}
    assert list(json.loads(last)[topic]) == ["0", "1"]

    _produce(log_url, topic, 300, 150)
    with open_backend(log_url) as backend:  # a partition added while the query is down
        backend.create_topic("stream-restart-new", 1)
    sizes = _run_available_now(spark, log_url, topic, checkpoint, out)
    assert sum(sizes) == 150

    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == 450
    assert sorted(r.v for r in rows) == sorted(f"v{i}" for i in range(450))
    assert len({(r.partition, r.offset) for r in rows}) == 450


def test_stream_picks_up_new_partitions_and_writes_back(spark, log_url, tmp_path):
    from pyspark.sql import functions as F

    _produce(log_url, "pattern-a", 0, 50, partitions=1)
    with open_backend(log_url) as backend:
        backend.create_topic("upper-out", 2)
    checkpoint = tmp_path / "ckpt"

    def run() -> None:
        query = (spark.readStream.format("ferry").option("log", log_url)
                 .option("subscribePattern", "pattern-.*").option("startingOffsets", "earliest")
                 .load()
                 .select("key", F.upper(F.col("value").cast("string")).alias("value"))
                 .writeStream.format("ferry").option("log", log_url)
                 .option("topic", "upper-out").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
            assert query.exception() is None
        finally:
            query.stop()

    run()
    _produce(log_url, "pattern-b", 50, 30, partitions=1)  # a new matching topic
    run()
    back = (spark.read.format("ferry").option("log", log_url).option("subscribe", "upper-out")
            .load().selectExpr("CAST(value AS STRING) AS v").collect())
    assert sorted(r.v for r in back) == sorted(f"V{i}" for i in range(80))


def test_replayed_stream_batch_is_not_written_twice(spark, log_url, tmp_path):
    """A crash after the sink committed batch N but before Spark recorded commits/N makes
    Spark run batch N again on restart; the sink sees its own commit and skips it."""
    _produce(log_url, "replay-in", 0, 100)
    with open_backend(log_url) as backend:
        backend.create_topic("replay-out", 1)
    checkpoint = tmp_path / "ckpt"

    def run() -> None:
        query = (spark.readStream.format("ferry").option("log", log_url)
                 .option("subscribe", "replay-in").option("startingOffsets", "earliest").load()
                 .select("key", "value").writeStream.format("ferry").option("log", log_url)
                 .option("topic", "replay-out").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        finally:
            query.stop()

    def written() -> int:
        with open_backend(log_url) as backend:
            tp = TopicPartition("replay-out", 0)
            return backend.list_offsets([tp], -1)[tp]

    run()
    assert written() == 100
    commits = [p for p in (checkpoint / "commits").iterdir() if p.name.isdigit()]
    last = max(commits, key=lambda p: int(p.name))
    last.unlink()  # as if the driver died right after the sink's commit
    (checkpoint / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    run()
    assert written() == 100
    assert last.exists()  # Spark did re-run the batch
