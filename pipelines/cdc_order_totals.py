"""Streaming CDC: the Postgres connector's change events of an ``orders`` table →
(1) the current state of every order, upserts and tombstones keyed by order id, on a
compacted topic; (2) order totals per customer per event-time window (with a watermark),
updated as orders arrive, on a second topic. Both outputs are JSON values with string keys,
ready for the S3 and Elasticsearch sinks (JsonConverter, ``schemas.enable=false``).

Input: Debezium-shaped change events (``format("ferry-cdc")``) whose rows have the columns
``--key`` (default ``id``), ``--customer`` (``customer_id``), ``--amount`` (``amount``) and
``--event-time`` (``created_at``, a timestamp). Totals count inserts and snapshot reads
(``op`` c/r): an order's amount is counted once, when it is placed.

::

    ferry pipeline run cdc_order_totals --log kafka://127.0.0.1:9092 \\
        --source pg.public.orders --state-topic orders-state \\
        --totals-topic order-totals --checkpoint /var/lib/ferry/cdc-orders
"""

from __future__ import annotations

import argparse
import json
import time

DESCRIPTION = ("streaming CDC: orders change events -> current state per order (compacted "
               "topic) and windowed totals per customer (topic)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", default="pg.public.orders",
                        help="the change-event topic of the orders table")
    parser.add_argument("--state-topic", default="orders-state")
    parser.add_argument("--totals-topic", default="order-totals")
    parser.add_argument("--key", default="id", help="the table's key column")
    parser.add_argument("--customer", default="customer_id")
    parser.add_argument("--amount", default="amount")
    parser.add_argument("--event-time", default="created_at")
    parser.add_argument("--window", default="1 hour", help="the totals' window length")
    parser.add_argument("--watermark", default="10 minutes",
                        help="how late an order may arrive and still be counted")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=100_000)
    parser.add_argument("--trigger", default="10 seconds",
                        help="micro-batch interval; 'available-now' processes what is there "
                             "and stops")
    parser.add_argument("--timeout", type=float, default=0,
                        help="stop after this many seconds (0: run until stopped)")
    parser.add_argument("--totals-envelope", choices=["none", "connect-json"], default="none",
                        help="connect-json: totals values carry their Connect schema "
                             "(JsonConverter with schemas.enable=true), for sinks that need "
                             "one, such as the JDBC sink")
    parser.add_argument("--schema", default=None,
                        help="the row columns as DDL ('op string, id int, ...') when the "
                             "source topic may still be empty")


#: The Connect schema of a totals value under ``--totals-envelope connect-json``.
TOTALS_SCHEMA = {"type": "struct", "name": "order_totals", "optional": False, "fields": [
    {"field": "customer_id", "type": "int64", "optional": False},
    {"field": "window_start", "type": "string", "optional": False},
    {"field": "window_end", "type": "string", "optional": False},
    {"field": "orders", "type": "int64", "optional": False},
    {"field": "total", "type": "double", "optional": True}]}

#: Timestamps in the state keep the microseconds PostgreSQL stores (Spark's JSON default
#: cuts them to milliseconds).
_JSON = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}


def build(spark, args: argparse.Namespace):
    """The two streaming DataFrames (state, totals), ready for ``writeStream``."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("ferry-cdc").option("log", args.log)
              .option("subscribe", args.source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger)))
    if args.schema:
        reader = reader.schema(args.schema)
    changes = reader.load()
    row_columns = [c for c in changes.columns if c != "op" and not c.startswith("_")]
    state = changes.select(
        F.col(args.key).cast("string").alias("key"),
        F.when(F.col("op") == "d", F.lit(None).cast("string"))
         .otherwise(F.to_json(F.struct(*row_columns), _JSON)).alias("value"))
    placed = changes.where(F.col("op").isin("c", "r"))
    totals = (placed.withWatermark(args.event_time, args.watermark)
              .groupBy(F.window(args.event_time, args.window), F.col(args.customer))
              .agg(F.count(F.lit(1)).alias("orders"), F.sum(args.amount).alias("total"))
              .select(
                  F.concat_ws("|", F.col(args.customer).cast("string"),
                              F.date_format("window.start", "yyyy-MM-dd'T'HH:mm:ss'Z'"))
                  .alias("key"),
                  _totals_value(args).alias("value")))
    return state, totals


def _totals_value(args: argparse.Namespace):
    from pyspark.sql import functions as F

    if getattr(args, "totals_envelope", "none") != "connect-json":
        return F.to_json(F.struct(F.col(args.customer).alias("customer_id"),
                                  F.col("window.start").alias("window_start"),
                                  F.col("window.end").alias("window_end"),
                                  "orders", F.col("total").cast("string").alias("total")))
    iso = "yyyy-MM-dd'T'HH:mm:ss'Z'"
    payload = F.to_json(F.struct(
        F.col(args.customer).cast("long").alias("customer_id"),
        F.date_format("window.start", iso).alias("window_start"),
        F.date_format("window.end", iso).alias("window_end"),
        "orders", F.col("total").cast("double").alias("total")))
    return F.concat(F.lit('{"schema":' + json.dumps(TOTALS_SCHEMA) + ',"payload":'), payload,
                    F.lit("}"))


def main(spark, args: argparse.Namespace) -> int:
    if not args.checkpoint:
        raise SystemExit("cdc_order_totals needs --checkpoint DIR (its offsets and window "
                         "state live there)")
    state, totals = build(spark, args)
    queries = [_start(state.writeStream.format("ferry").option("log", args.log)
                      .option("topic", args.state_topic), args, "state", "append")]
    # Python data sources accept only append from a stream; window totals change as orders
    # arrive (update mode), so each micro-batch's updated rows go out as a batch write.
    totals_topic, log_url = args.totals_topic, args.log

    def write_totals(batch, batch_id: int) -> None:
        (batch.write.format("ferry").option("log", log_url).option("topic", totals_topic)
         .mode("append").save())

    queries.append(_start(totals.writeStream.foreachBatch(write_totals), args, "totals",
                          "update"))
    deadline = time.monotonic() + args.timeout if args.timeout else None
    try:
        for query in queries:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining is None:
                query.awaitTermination()
            else:
                query.awaitTermination(remaining)
        for query in queries:
            if query.exception() is not None:
                raise query.exception()
    finally:
        for query in queries:
            query.stop()
    return 0


def _start(writer, args: argparse.Namespace, name: str, mode: str):
    writer = (writer.option("checkpointLocation", f"{args.checkpoint}/{name}")
              .outputMode(mode).queryName(f"cdc_order_totals_{name}"))
    if args.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    return writer.start()


if __name__ == "__main__":
    import sys

    from pipelines import submit_main

    sys.exit(submit_main(sys.modules[__name__]))
