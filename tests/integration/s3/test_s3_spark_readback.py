"""Objects the S3 sink wrote, read back by Spark as a lake job would: JSON, Parquet and Avro
under Spark's partition discovery (``partition=N`` directories become a column), compared
with the records that were produced.

Spark cannot reach moto's S3 API without the hadoop-aws jars, which the pyspark wheel does
not ship (and CI is offline), so the test downloads the objects with boto3, keeping their
keys as paths, and Spark reads the local copy: the files are the same bytes either way.

Avro: the pyspark 4 wheel bundles Spark's Avro reader (``org.apache.spark.sql.avro``) in
its spark-sql jar, but does not register the short name ``avro`` (that needs the external
spark-avro package); the test names the reader by its class, which reads the same files.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import s3_config, wait_for

pytest.importorskip("pyspark", reason="the ferryman[spark] extra is not installed")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime (tests/run installs openjdk-17-jre-headless)",
                allow_module_level=True)

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

#: The Spark suite's session settings (one home for them).
_SPARK_TESTS = str(Path(__file__).resolve().parents[1] / "spark")
if _SPARK_TESTS not in sys.path:
    sys.path.append(_SPARK_TESTS)
from spark_helpers import session_builder  # noqa: E402

#: Spark's built-in Avro file format, by class (see the module docstring).
AVRO_SOURCE = "org.apache.spark.sql.avro.AvroFileFormat"
PARTITIONS, PER_PARTITION, FLUSH = 2, 28, 7
T0_MS, DAY0 = 1_700_000_000_000, 19_000

SCHEMA = {"type": "struct", "name": "com.example.Order", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "item", "type": "string", "optional": True},
    {"field": "qty", "type": "int32", "optional": False},
    {"field": "price", "type": "double", "optional": False},
    {"field": "paid", "type": "boolean", "optional": False},
    {"field": "ts", "type": "int64", "optional": False,
     "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
    {"field": "day", "type": "int32", "optional": False,
     "name": "org.apache.kafka.connect.data.Date", "version": 1}]}


def payload(partition: int, i: int) -> dict[str, Any]:
    return {"id": partition * 1000 + i, "item": None if i % 5 == 0 else f"item-{i}",
            "qty": i % 7, "price": i * 1.25, "paid": i % 2 == 0, "ts": T0_MS + i * 1000,
            "day": DAY0 + i}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """The Spark suite's session when it is already up in this run, else one of our own
    for this module, stopped after it."""
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    session = existing or session_builder().getOrCreate()
    yield session
    if existing is None:
        session.stop()


def download(moto, bucket: str, into: Path) -> list[str]:
    """Every object of ``bucket`` to ``into``/<key>; returns the keys."""
    keys = moto.keys(bucket)
    for key, data in moto.objects(bucket).items():
        path = into / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return keys


FORMATS = {
    "json": ("JsonFormat", ".json"),
    "parquet": ("ParquetFormat", ".snappy.parquet"),
    "avro": ("AvroFormat", ".avro"),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_spark_reads_back_the_records_that_went_in(moto, stack, spark, tmp_path: Path,
                                                   fmt: str) -> None:
    from pyspark.sql import functions as F

    bucket = f"spark-{fmt}"
    moto.create_bucket(bucket)
    s = stack()
    s.topic("orders", PARTITIONS)
    for p in range(PARTITIONS):
        s.produce("orders", [{"schema": SCHEMA, "payload": payload(p, i)}
                             for i in range(PER_PARTITION)], partition=p)
    format_class, ext = FORMATS[fmt]
    s.sink("spark-" + fmt, s3_config(moto, bucket, topics="orders", **{
        "format.class": format_class, "flush.size": str(FLUSH),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true"}))
    expected_keys = sorted(f"topics/orders/partition={p}/orders+{p}+{o:010d}{ext}"
                           for p in range(PARTITIONS) for o in range(0, PER_PARTITION, FLUSH))
    wait_for(lambda: moto.keys(bucket) == expected_keys, "every object", timeout=60)
    download(moto, bucket, tmp_path)
    root = str(tmp_path / "topics" / "orders")

    if fmt == "json":
        df = spark.read.json(root)
    elif fmt == "parquet":
        df = spark.read.parquet(root)
    else:
        df = spark.read.format(AVRO_SOURCE).load(root)
    types = dict(df.dtypes)
    assert types["partition"] == "int"  # Spark's partition discovery of partition=N
    if fmt == "json":
        # JSON carries no types: Spark infers them; Timestamp and Date are written as
        # epoch milliseconds and days, as Kafka's JsonConverter does.
        assert {k: types[k] for k in ("id", "qty", "ts", "day")} == dict.fromkeys(
            ("id", "qty", "ts", "day"), "bigint")
        rows = df.select("partition", "id", "item", "qty", "price", "paid", "ts", "day")
    else:
        assert {k: v for k, v in types.items() if k != "partition"} == {
            "id": "bigint", "item": "string", "qty": "int", "price": "double",
            "paid": "boolean", "ts": "timestamp", "day": "date"}
        rows = df.select("partition", "id", "item", "qty", "price", "paid",
                         F.unix_millis("ts").alias("ts"), F.unix_date("day").alias("day"))
    got = sorted((r.asDict() for r in rows.collect()), key=lambda r: r["id"])
    assert got == [{"partition": p, **payload(p, i)}
                   for p in range(PARTITIONS) for i in range(PER_PARTITION)]
