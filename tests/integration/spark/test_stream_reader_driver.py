"""The stream reader's driver side called as Spark calls it (``initialOffset``,
``latestOffset(start, limit)``, ``partitions``, ``commit``) against a real broker, without
a JVM: ``minOffsetsPerTrigger`` with ``maxTriggerDelay``, ``commitToGroup``, new partitions
at earliest, canonical offsets."""

from __future__ import annotations

import time

from core.backends import OffsetAndMetadata, ProducerRecord, TopicPartition, open_backend


def _reader(log_url: str, **options: str):
    from connectors.spark.formats import decoding_for
    from connectors.spark.options import SourceOptions
    from connectors.spark.source import FerryStreamReader

    opts = SourceOptions.parse({"log": log_url, **options}, streaming=True)
    decoding = decoding_for(opts)
    return FerryStreamReader(opts, decoding, decoding.spark_schema())


def _produce(log_url: str, topic: str, count: int, partitions: int = 1) -> None:
    with open_backend(log_url) as backend:
        if topic not in backend.list_topics():
            backend.create_topic(topic, partitions)
        backend.produce(topic, [ProducerRecord(None, b"v", partition=0) for _ in range(count)])


def test_min_offsets_per_trigger_waits_for_records_or_the_delay(log_url):
    _produce(log_url, "min-trigger", 10)
    reader = _reader(log_url, subscribe="min-trigger", startingOffsets="earliest",
                     minOffsetsPerTrigger="20", maxTriggerDelay="1500ms")
    try:
        start = reader.initialOffset()
        limit = reader.getDefaultReadLimit()
        assert reader.latestOffset(start, limit) == start  # 10 < 20: hold back
        _produce(log_url, "min-trigger", 15)
        assert reader.latestOffset(start, limit) == {"min-trigger": {"0": 25}}
        _produce(log_url, "min-trigger", 5)
        nxt = {"min-trigger": {"0": 25}}
        assert reader.latestOffset(nxt, limit) == nxt
        time.sleep(1.6)  # maxTriggerDelay passed: take what there is
        assert reader.latestOffset(nxt, limit) == {"min-trigger": {"0": 30}}
    finally:
        reader.stop()


def test_commit_to_group_and_new_partitions(log_url):
    _produce(log_url, "lagged", 7)
    reader = _reader(log_url, subscribePattern="lagged.*", startingOffsets="earliest",
                     commitToGroup="spark-lag")
    try:
        start = reader.initialOffset()
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        assert end == {"lagged": {"0": 7}}
        reader.commit(end)
        with open_backend(log_url) as backend:
            committed = backend.fetch_offsets("spark-lag")
        assert committed == {TopicPartition("lagged", 0): OffsetAndMetadata(
            7, "spark", committed[TopicPartition("lagged", 0)].leader_epoch,
            committed[TopicPartition("lagged", 0)].commit_timestamp)}

        _produce(log_url, "lagged-new", 3)  # a topic created later: read from earliest
        end2 = reader.latestOffset(end, reader.getDefaultReadLimit())
        assert list(end2) == ["lagged", "lagged-new"]
        assert end2["lagged-new"] == {"0": 3}
        ranges = [p.range for p in reader.partitions(end, end2)]
        assert [(r.topic, r.partition, r.start, r.end) for r in ranges] == [
            ("lagged-new", 0, 0, 3)]
    finally:
        reader.stop()
