"""``failOnDataLoss``: offsets removed from the log (DeleteRecords through a real Kafka
admin client, as retention would) fail a batch or streaming query with a clear message,
or are skipped when the option is false."""

from __future__ import annotations

import json

import pytest

from core.backends import ProducerRecord, open_backend


def _produce(log_url: str, topic: str, start: int, count: int) -> None:
    with open_backend(log_url) as backend:
        if topic not in backend.list_topics():
            backend.create_topic(topic, 1)
        backend.produce(topic, [ProducerRecord(None, f"v{i}".encode(), partition=0)
                                for i in range(start, start + count)])


def _delete_before(spark_broker, topic: str, offset: int) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": spark_broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, offset)], request_timeout=15)
    for future in futures.values():
        assert future.result(timeout=30).low_watermark == offset


def test_batch_read_of_deleted_offsets(spark, spark_broker, log_url):
    from pyspark.errors import PySparkException

    _produce(log_url, "lossy", 0, 100)
    _delete_before(spark_broker, "lossy", 50)
    start = json.dumps({"lossy": {"0": 10}})
    reader = (spark.read.format("ferry").option("log", log_url).option("subscribe", "lossy")
              .option("startingOffsets", start))
    with pytest.raises(PySparkException) as info:
        reader.load().count()
    assert "offsets 10..49 are no longer in the log" in str(info.value)
    assert "failOnDataLoss=false" in str(info.value)
    rows = reader.option("failOnDataLoss", "false").load().select("offset").collect()
    assert sorted(r.offset for r in rows) == list(range(50, 100))


def test_stream_after_deleted_offsets(spark, spark_broker, log_url, tmp_path):
    from pyspark.errors import StreamingQueryException

    topic, checkpoint, out = "lossy-stream", tmp_path / "ckpt", tmp_path / "out"
    _produce(log_url, topic, 0, 100)

    def run(fail_on_data_loss: str):
        query = (spark.readStream.format("ferry").option("log", log_url)
                 .option("subscribe", topic).option("startingOffsets", "earliest")
                 .option("failOnDataLoss", fail_on_data_loss).load()
                 .selectExpr("offset").writeStream.format("parquet").option("path", str(out))
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        except StreamingQueryException as exc:
            return exc
        finally:
            query.stop()
        return None

    assert run("true") is None
    _produce(log_url, topic, 100, 100)
    _delete_before(spark_broker, topic, 150)
    error = run("true")
    assert error is not None and "offsets 100..149 are no longer in the log" in str(error)
    assert run("false") is None
    offsets = sorted(r.offset for r in spark.read.parquet(str(out)).collect())
    assert offsets == list(range(100)) + list(range(150, 200))


def test_stream_after_a_topic_is_deleted(spark, log_url, tmp_path):
    from pyspark.errors import StreamingQueryException

    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    _produce(log_url, "gone-a", 0, 10)
    _produce(log_url, "gone-b", 0, 10)

    def run(fail_on_data_loss: str):
        query = (spark.readStream.format("ferry").option("log", log_url)
                 .option("subscribePattern", "gone-.*").option("startingOffsets", "earliest")
                 .option("failOnDataLoss", fail_on_data_loss).load()
                 .selectExpr("topic", "offset").writeStream.format("parquet")
                 .option("path", str(out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        except StreamingQueryException as exc:
            return exc
        finally:
            query.stop()
        return None

    assert run("true") is None
    with open_backend(log_url) as backend:
        backend.delete_topic("gone-b")
    _produce(log_url, "gone-a", 10, 5)
    error = run("true")
    assert error is not None and "gone-b-0 no longer exists" in str(error)
    assert run("false") is None
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.topic, r.offset) for r in rows) == (
        [("gone-a", o) for o in range(15)] + [("gone-b", o) for o in range(10)])
