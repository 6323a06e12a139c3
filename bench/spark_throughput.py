"""Throughput of ``format("ferry")`` on Spark against the LogBackend's own speed.

Run from the repository root (a script, not a test; it starts its own ``ferry broker`` and
a ``local[2]`` SparkSession, and needs the ``spark`` extra and Java 17):

    python3 bench/spark_throughput.py [--records 1000000] [--repeats 3]

Data: ``--records`` records with 100-byte values and 8-byte keys in a 2-partition topic on
a ``ferry broker`` subprocess, reached through ``kafka://``. Each figure is the median of
``--repeats`` runs, next to its limit measured in the same run:

* **limit, fetch**: one process fetching every record through ``LogBackend.fetch``
  (8 MB per request) and decoding it into ``ConsumerRecord``s; the same followed by the
  Arrow conversion ``read()`` does;
* **limit, produce**: one process producing the records through ``LogBackend.produce``
  in calls of 5,000;
* **limit, Spark**: a Python data source yielding one prebuilt Arrow batch of the same
  schema again and again → ``noop``: what Spark itself costs per row;
* **batch read**: ``spark.read.format("ferry")`` → the ``noop`` sink (every row read,
  nothing written), 2 tasks; and with ``minPartitions=4``;
* **batch write**: a cached DataFrame of the records → ``write.format("ferry")``;
* **streaming**: ``readStream.format("ferry")`` → ``upper(value)`` → ``writeStream
  .format("ferry")`` with ``availableNow`` and ``maxOffsetsPerTrigger`` 250,000: rows/s over
  the whole query and ``triggerExecution`` per micro-batch;
* **end-to-end latency**: a running stream (default trigger) copying one topic to another;
  one record produced at a time, the time until it is fetched from the output topic.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from broker_process import BrokerProcess  # noqa: E402

from connectors.spark.arrow import records_to_columns  # noqa: E402
from core.backends import OffsetSpec, ProducerRecord, TopicPartition, open_backend  # noqa: E402

CALL = 5000
FETCH = 8 * 1024 * 1024


def produce(url: str, topic: str, records: list[ProducerRecord]) -> float:
    with open_backend(url) as backend:
        start = time.perf_counter()
        for i in range(0, len(records), CALL):
            backend.produce(topic, records[i:i + CALL])
        return time.perf_counter() - start


def fetch_all(url: str, topic: str, partitions: int, arrow: bool) -> tuple[float, int]:
    with open_backend(url) as backend:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = backend.list_offsets(tps, OffsetSpec.LATEST)
        count = 0
        start = time.perf_counter()
        for tp in tps:
            pos = 0
            while pos < ends[tp]:
                result = backend.fetch({tp: pos}, max_bytes=FETCH, max_partition_bytes=FETCH)[tp]
                if result.records:
                    count += len(result.records)
                    if arrow:
                        records_to_columns(result.records, False)
                pos = result.next_offset
        return time.perf_counter() - start, count


def synthetic_source(n: int):
    """A data source yielding one prebuilt Arrow batch of the Kafka schema over and over:
    what Spark itself costs for a Python source of ``n`` rows in 2 tasks (its ceiling)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from connectors.spark.arrow import kafka_arrow_fields, kafka_spark_schema

    class Reader(DataSourceReader):
        def partitions(self):
            return [InputPartition(0), InputPartition(1)]

        def read(self, partition):
            import pyarrow as pa

            rows = 50_000
            schema = pa.schema(kafka_arrow_fields(False))
            batch = pa.RecordBatch.from_arrays([
                pa.array([b"00000000"] * rows, pa.binary()),
                pa.array([b"x" * 100] * rows, pa.binary()), pa.array(["t"] * rows),
                pa.array([0] * rows, pa.int32()), pa.array(range(rows), pa.int64()),
                pa.array([0] * rows, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                pa.array([0] * rows, pa.int32())], schema=schema)
            for _ in range(n // 2 // rows):
                yield batch

    class Synthetic(DataSource):
        @classmethod
        def name(cls):
            return "ferry-bench-synthetic"

        def schema(self):
            return kafka_spark_schema(False)

        def reader(self, schema):
            return Reader()

    return Synthetic


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def stream_copy(spark, url: str, source: str, sink: str, checkpoint: str
                ) -> tuple[float, list[int], int]:
    from pyspark.sql import functions as F

    start = time.perf_counter()
    query = (spark.readStream.format("ferry").option("log", url).option("subscribe", source)
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "250000")
             .load().select("key", F.upper(F.col("value").cast("string")).alias("value"))
             .writeStream.format("ferry").option("log", url).option("topic", sink)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    wall = time.perf_counter() - start
    progress = query.recentProgress
    query.stop()
    return (wall, [p["durationMs"].get("triggerExecution", 0) for p in progress],
            sum(p["numInputRows"] for p in progress))


def latency(spark, url: str, tmp: str, samples: int) -> list[float]:
    with open_backend(url) as backend:
        backend.create_topic("lat-in", 1)
        backend.create_topic("lat-out", 1)
    query = (spark.readStream.format("ferry").option("log", url).option("subscribe", "lat-in")
             .load().select("key", "value").writeStream.format("ferry").option("log", url)
             .option("topic", "lat-out").option("checkpointLocation", f"{tmp}/lat").start())
    out, tp = [], TopicPartition("lat-out", 0)
    try:
        with open_backend(url) as backend:
            time.sleep(8)  # the first micro-batch of a fresh query pays for planning
            pos = 0
            for i in range(samples + 1):
                sent = time.perf_counter()
                backend.produce("lat-in", [ProducerRecord(b"k", f"{i}".encode())])
                deadline = sent + 30
                while time.perf_counter() < deadline:
                    result = backend.fetch({tp: pos}, max_wait_ms=200)[tp]
                    pos = result.next_offset
                    if result.records:
                        break
                if i:  # the first sample warms up the Python workers
                    out.append(time.perf_counter() - sent)
    finally:
        query.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-samples", type=int, default=10)
    args = parser.parse_args()
    n = args.records
    records = [ProducerRecord(f"{i:08d}".encode(), os.urandom(50).hex().encode())
               for i in range(n)]
    results: dict[str, list[float]] = {}
    print(f"load average at the start: {os.getloadavg()[0]:.1f} (2 cores)", flush=True)

    def note(name: str, seconds: float, rows: int = n) -> None:
        results.setdefault(name, []).append(rows / seconds)

    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", {}, Path(tmp) / "broker.log")
        broker.start()
        url = f"kafka://{broker.bootstrap}"
        try:
            with open_backend(url) as backend:
                backend.create_topic("bench-in", 2)
                for r in range(args.repeats):
                    backend.create_topic(f"limit-out-{r}", 2)
                    backend.create_topic(f"spark-out-{r}", 2)
                    backend.create_topic(f"stream-out-{r}", 2)
            produce(url, "bench-in", records)
            fetch_all(url, "bench-in", 2, arrow=True)  # warm-up: imports, broker page cache
            for r in range(args.repeats):
                note("limit: LogBackend.produce", produce(url, f"limit-out-{r}", records))
                seconds, count = fetch_all(url, "bench-in", 2, arrow=False)
                assert count == n, count
                note("limit: LogBackend.fetch", seconds)
                note("limit: LogBackend.fetch + Arrow columns",
                     fetch_all(url, "bench-in", 2, arrow=True)[0])

            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            from pyspark.sql import SparkSession

            spark = (SparkSession.builder.master("local[2]").appName("ferry-bench")
                     .config("spark.ui.enabled", "false")
                     .config("spark.sql.shuffle.partitions", "2").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            from connectors.spark import register

            register(spark)
            try:
                def read():
                    return spark.read.format("ferry").option("log", url) \
                        .option("subscribe", "bench-in")

                read().load().write.format("noop").mode("overwrite").save()  # warm-up
                spark.dataSource.register(synthetic_source(n))
                synthetic = spark.read.format("ferry-bench-synthetic")
                synthetic.load().write.format("noop").mode("overwrite").save()
                for _ in range(args.repeats):
                    note("limit: Spark, prebuilt Arrow batches -> noop", timed(
                        lambda: synthetic.load().write.format("noop").mode("overwrite").save()))
                    note("spark: batch read -> noop", timed(
                        lambda: read().load().write.format("noop").mode("overwrite").save()))
                    note("spark: batch read -> noop, minPartitions=4", timed(
                        lambda: read().option("minPartitions", "4").load().write
                        .format("noop").mode("overwrite").save()))
                cached = read().load().select("key", "value").cache()
                assert cached.count() == n
                for r in range(args.repeats):
                    note("spark: batch write", timed(
                        lambda r=r: cached.write.format("ferry").option("log", url)
                        .option("topic", f"spark-out-{r}").mode("append").save()))
                cached.unpersist()
                for r in range(args.repeats):
                    wall, triggers, rows = stream_copy(spark, url, "bench-in",
                                                       f"stream-out-{r}", f"{tmp}/ckpt-{r}")
                    assert rows == n, rows
                    note("spark: stream read -> upper -> stream write", wall)
                    print(f"  stream run {r}: triggerExecution ms per micro-batch: {triggers}",
                          flush=True)
                lat = latency(spark, url, tmp, args.latency_samples)
            finally:
                spark.stop()
        finally:
            broker.stop()

    print(f"  load average at the end: {os.getloadavg()[0]:.1f} (2 cores)")
    print(f"\n{n:,} records, 100-byte values, 2 partitions, local[2], kafka:// on ferry "
          f"broker; median of {args.repeats} (rows/s)")
    for name, values in results.items():
        print(f"  {name:<48} {statistics.median(values):>12,.0f}   "
              f"(runs: {', '.join(f'{v:,.0f}' for v in values)})")
    fetch = statistics.median(results["limit: LogBackend.fetch"])
    prod = statistics.median(results["limit: LogBackend.produce"])
    ceiling = statistics.median(results["limit: Spark, prebuilt Arrow batches -> noop"])
    print(f"  batch read / fetch limit:   "
          f"{statistics.median(results['spark: batch read -> noop']) / fetch:.0%}")
    print(f"  batch read / Spark's ceiling: "
          f"{statistics.median(results['spark: batch read -> noop']) / ceiling:.0%}")
    print(f"  batch write / produce limit: "
          f"{statistics.median(results['spark: batch write']) / prod:.0%}")
    print(f"  end-to-end latency, one record through a running stream: median "
          f"{statistics.median(lat) * 1000:.0f} ms, max {max(lat) * 1000:.0f} ms "
          f"({len(lat)} samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
