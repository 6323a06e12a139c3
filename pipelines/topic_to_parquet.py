"""Batch: copy a topic's offset range into Parquet files, with the Kafka columns
(key/value as binary, or as strings with ``--strings``) and a ``date`` partition column.

::

    ferry pipeline run topic_to_parquet --log kafka://127.0.0.1:9092 --topic orders \\
        --output /data/orders [--starting-offsets earliest] [--ending-offsets latest]
"""

from __future__ import annotations

import argparse

DESCRIPTION = "batch: read a topic's offset range (default: all of it) into Parquet files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True, help="topics to read, comma-separated")
    parser.add_argument("--output", required=True, help="the Parquet directory (any Hadoop "
                        "path Spark can write: local, hdfs://, s3a://)")
    parser.add_argument("--starting-offsets", default="earliest",
                        help="earliest or Spark's per-partition JSON")
    parser.add_argument("--ending-offsets", default="latest",
                        help="latest or Spark's per-partition JSON")
    parser.add_argument("--strings", action="store_true",
                        help="write key and value as UTF-8 strings instead of binary")
    parser.add_argument("--mode", default="errorifexists",
                        choices=["errorifexists", "append", "overwrite"],
                        help="what to do when the output exists (default: fail)")


def main(spark, args: argparse.Namespace) -> int:
    from pyspark.sql import functions as F

    df = (spark.read.format("ferry").option("log", args.log).option("subscribe", args.topic)
          .option("startingOffsets", args.starting_offsets)
          .option("endingOffsets", args.ending_offsets).option("includeHeaders", "true")
          .load())
    if args.strings:
        df = df.withColumn("key", F.col("key").cast("string")) \
               .withColumn("value", F.col("value").cast("string"))
    df = df.withColumn("date", F.to_date("timestamp"))
    df.write.mode(args.mode).partitionBy("date").parquet(args.output)
    return 0


if __name__ == "__main__":
    import sys

    from pipelines import submit_main

    sys.exit(submit_main(sys.modules[__name__]))
