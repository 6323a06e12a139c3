"""Per-record cost of the Connect framework's steps, in microseconds: building records,
JsonConverter both ways, the sink task's conversion of a consumed record, S3 JsonFormat.

Run from the repository root (a script, not a test):

    python3 bench/connect_record_path.py [--calls 5000] [--repeats 7]

Each figure is the best of ``--repeats`` runs of ``--calls`` calls, single-threaded, with
the worker's gc thresholds (``connect.runtime.process_tuning``). The records are those of
the connector benchmarks: a Debezium change event of a four-column table (key and
envelope with its ~3 kB schema, as ``bench/postgres_cdc.py`` produces them) and the 1 KiB
JSON record of ``bench/s3_sink_throughput.py``, schemaless and in a schema envelope
written by Python's ``json.dumps``. To compare two trees, run the script from each.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from connect.api import Headers, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct  # noqa: E402
from connect.converters.json import JsonConverter  # noqa: E402
from connect.converters.string import StringConverter  # noqa: E402
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connect.runtime.worker_sink_task import WorkerSinkTask  # noqa: E402
from connect.transforms.chain import build_transformation_chain  # noqa: E402
from connectors.s3.json_values import to_json_bytes  # noqa: E402
from core.backends.types import ConsumerRecord  # noqa: E402

#: Debezium's io.debezium.connector.postgresql.Source block (16 fields).
SOURCE = (
    SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source").version(1)
    .field("version", Schema.STRING_SCHEMA).field("connector", Schema.STRING_SCHEMA)
    .field("name", Schema.STRING_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", SchemaBuilder.string().name("io.debezium.data.Enum").version(1)
           .parameter("allowed", "true,last,false,incremental").default_value("false")
           .optional())
    .field("db", Schema.STRING_SCHEMA).field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    .field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA).field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("xmin", Schema.OPTIONAL_INT64_SCHEMA).field("origin", Schema.OPTIONAL_STRING_SCHEMA)
    .field("origin_lsn", Schema.OPTIONAL_INT64_SCHEMA).build())
BLOCK = (SchemaBuilder.struct().optional().name("event.block").version(1)
         .field("id", Schema.STRING_SCHEMA).field("total_order", Schema.INT64_SCHEMA)
         .field("data_collection_order", Schema.INT64_SCHEMA).build())
ZONED = (SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1).optional()
         .build())
ROW = (SchemaBuilder.struct().name("bench.public.bench.Value").optional()
       .field("id", Schema.INT32_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
       .field("qty", Schema.OPTIONAL_INT32_SCHEMA).field("at", ZONED).build())
KEY = (SchemaBuilder.struct().name("bench.public.bench.Key").field("id", Schema.INT32_SCHEMA)
       .build())
EVENT_SCHEMA = {"type": "struct", "name": "bench.Event", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "user", "type": "string", "optional": False},
    {"field": "score", "type": "double", "optional": False},
    {"field": "payload", "type": "string", "optional": False}]}
EVENT = {"id": 12345, "user": "user-383", "score": 6172.5, "payload": ("abcdefghij" * 95)[:945]}


def envelope_schema() -> Schema:
    return (SchemaBuilder.struct().name("bench.public.bench.Envelope").version(2)
            .field("before", ROW).field("after", ROW).field("source", SOURCE)
            .field("transaction", BLOCK).field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA).build())


def converter(**configs: str) -> JsonConverter:
    c = JsonConverter()
    c.configure(configs, is_key=configs.pop("is_key", "") == "true")
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    tune_gc_for_record_streams()

    def best(step: Callable[[], Any]) -> float:
        runs = timeit.repeat(step, number=args.calls, repeat=args.repeats)
        return round(min(runs) / args.calls * 1e6, 2)

    envelope = envelope_schema()
    after = Struct.from_values(ROW, [7, "name-7", 7, "2026-11-27T02:00:00.123456Z"])
    source = Struct.from_values(SOURCE, [
        "2.7", "postgresql", "bench", 1000, "true", "postgres", None, 1000000, 10**9,
        "public", "bench", 55, 123456, None, None, None])
    key = Struct.from_values(KEY, [7])
    value = Struct.from_values(envelope, [None, after, source, None, "r", 1, 2, 3])
    key_conv, value_conv = converter(is_key="true"), converter()
    # The task first saw an equal schema object (a connector rebuilding a table's schema).
    value_conv.from_connect_data("t", envelope_schema(), value)
    partition = {"server": "bench"}
    header_conv = StringConverter()
    header_conv.configure({"converter.type": "header"})
    chain = build_transformation_chain({})
    out: dict[str, float] = {
        "SourceRecord(...) of a change event": best(lambda: SourceRecord(
            topic="t", key_schema=KEY, key=key, value_schema=envelope, value=value,
            source_partition=partition, source_offset={"lsn": 5})),
        "SinkRecord(...)": best(lambda: SinkRecord(
            topic="t", kafka_partition=0, kafka_offset=5, value="x", timestamp=5,
            headers=Headers())),
        "JsonConverter, change event key + value to bytes": best(lambda: (
            key_conv.from_connect_data("t", KEY, key),
            value_conv.from_connect_data("t", envelope, value))),
    }
    for mode, doc in (("schemaless", json.dumps(EVENT)),
                      ("schema envelope", json.dumps({"schema": EVENT_SCHEMA,
                                                      "payload": EVENT}))):
        consumed = ConsumerRecord("t", 0, 5, 1000, 0, None, doc.encode(), [])
        sink_conv = converter(**{"schemas.enable": str(mode != "schemaless").lower()})
        pipeline = (key_conv, sink_conv, header_conv, chain)
        out[f"sink task: 1 KiB {mode} record to SinkRecord"] = best(
            lambda c=consumed, p=pipeline: WorkerSinkTask._convert(c, None, p))  # type: ignore[arg-type]
    out["S3 JsonFormat: 1 KiB schemaless value to bytes"] = best(
        lambda: to_json_bytes(None, EVENT))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
