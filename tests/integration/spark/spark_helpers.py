"""The SparkSession the Spark suite uses, and reading a keyed output topic back (not a
test module)."""

from __future__ import annotations

import os
import sys

__all__ = ["TEST_JVM_FLAGS", "latest_by_key", "session_builder"]

#: JVM flags that cut session start-up by about a third; for tests only.
TEST_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def session_builder(master: str = "local[2]"):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (SparkSession.builder.master(master).appName("ferry-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.extraJavaOptions", TEST_JVM_FLAGS)
            .config("spark.executor.extraJavaOptions", TEST_JVM_FLAGS))


def latest_by_key(log_url: str, topic: str) -> dict[str, bytes | None]:
    """The last value of every (string) key in partition 0 of ``topic``, None for a
    tombstone: what compaction keeps."""
    from core.backends import TopicPartition, open_backend

    tp = TopicPartition(topic, 0)
    out: dict[str, bytes | None] = {}
    with open_backend(log_url) as backend:
        pos = 0
        while True:
            result = backend.fetch({tp: pos})[tp]
            for r in result.records:
                out[r.key.decode()] = r.value
            if result.next_offset == pos:
                return out
            pos = result.next_offset
