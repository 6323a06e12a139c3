"""Postgres CDC: CPU time per record of each stage of the worker's path, no database.

Run from the repository root:

    python3 bench/postgres_cdc_stages.py [--records 4096] [--repeats 5]

The records are those of ``bench/postgres_cdc.py`` (int key, text, int, timestamptz):
pgoutput Insert messages built in memory and snapshot rows as the cursor returns them
(text). Each stage runs over all of them ``--repeats`` times under the worker's garbage
collector thresholds, and the best run's thread CPU time per record is reported:

- ``decode``: ``pgoutput.decode`` alone (what the raw slot read does per change);
- ``stream``: ``ChangeStream.handle`` (decoding included) up to the ``SourceRecord``;
- ``snapshot``: snapshot rows of one batch to ``SourceRecord`` s;
- ``convert_stream``/``convert_snapshot``: the worker's per-record step
  (``WorkerSourceTask._convert``: transformations, JsonConverter key and value);
- ``produce``: the converted records to an ``embedded:`` log in calls of 2,048;
- ``send_stream``/``send_snapshot``: conversion and produce together as the worker does
  them for a poll's records (``WorkerSourceTask._send``): runs of about
  ``SEND_RUN_BYTES`` converted, then produced.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import sys
import tempfile
import time
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from connect.converters.json import JsonConverter  # noqa: E402
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connect.runtime.worker_source_task import SEND_RUN_BYTES, WorkerSourceTask  # noqa: E402
from connect.transforms.chain import TransformationChain  # noqa: E402
from connectors.postgres import pgoutput as pg  # noqa: E402
from connectors.postgres.config import PostgresConfig, TableId  # noqa: E402
from connectors.postgres.events import (  # noqa: E402
    EventFactory,
    SourceColumn,
    SourceInfo,
    TableSchema,
)
from connectors.postgres.position import Position, SnapshotState  # noqa: E402
from connectors.postgres.stream import ChangeStream  # noqa: E402
from connectors.postgres.types import TypeMapper  # noqa: E402
from core.backends.embedded import EmbeddedBackend  # noqa: E402

COLUMNS = [("id", 23, True), ("name", 25, False), ("qty", 23, False), ("at", 1184, False)]
AT = "2026-11-27 06:11:53.123456+00"


def _text(value: str) -> bytes:
    data = value.encode()
    return b"t" + struct.pack(">i", len(data)) + data


def _messages(n: int) -> list[bytes]:
    rel = b"R" + struct.pack(">I", 1) + b"public\0bench\0d" + struct.pack(">h", len(COLUMNS))
    for name, oid, key in COLUMNS:
        rel += bytes([int(key)]) + name.encode() + b"\0" + struct.pack(">Ii", oid, -1)
    begin = b"B" + struct.pack(">qqI", 10**9, 0, 777)
    inserts = [b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">h", 4)
               + _text(str(i)) + _text(f"new-{i}") + _text("1") + _text(AT)
               for i in range(n)]
    return [rel, begin, *inserts]


def _best(run, repeats: int, n: int) -> float:
    return round(min(timeit.repeat(run, number=1, repeat=repeats, timer=time.thread_time))
                 / n * 1e6, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = args.records
    tune_gc_for_record_streams()
    cfg = PostgresConfig.parse({"database.hostname": "h", "database.user": "u",
                                "database.dbname": "postgres", "topic.prefix": "bench"})
    factory = EventFactory(cfg, "bench")
    mapper = TypeMapper(decimal_mode=cfg.decimal_handling_mode,
                        time_mode=cfg.time_precision_mode, binary_mode=cfg.binary_handling_mode,
                        include_unknown=False, placeholder=cfg.unavailable_value_placeholder,
                        types={}, interval_mode=cfg.interval_handling_mode,
                        money_digits=cfg.money_fraction_digits)
    table = TableSchema("bench", TableId("public", "bench"),
                        [SourceColumn(name, oid, -1, not key) for name, oid, key in COLUMNS],
                        ["id"], mapper, cfg)
    stream = ChangeStream(cfg, factory, lambda rel: table, None, 0)
    messages = _messages(n)
    for at, message in enumerate(messages[:2]):
        stream.handle(at, message)
    inserts = messages[2:]
    rows = [(str(i), f"name-{i}", str(i % 100), AT) for i in range(n)]
    offset = Position(None, None, None, 0, 1, SnapshotState(5, 6, False)).to_offset()
    source = factory.source(table.table, SourceInfo(1, "true", 6, 5, None))
    makers = getattr(table, "makers", None)
    if makers is not None:
        batch = makers(factory.partition)[1]
    else:  # a tree before the generated record makers: the factory's path, for comparison
        def batch(rows, op, source, offset):  # type: ignore[no-untyped-def]
            out = []
            for row in rows:
                after, key = table.row_and_key(row)
                out.append(factory.change(table, op, None, after, None, offset, key=key,
                                          source=source))
            return out
    streamed: list = []
    snapshot: list = []

    def decode() -> None:
        for m in inserts:
            pg.decode(m)

    def stream_records() -> None:
        streamed.clear()
        for at, m in enumerate(inserts):
            streamed.extend(stream.handle(1000 + at, m))

    def snapshot_records() -> None:
        snapshot[:] = batch(rows, "r", source, offset)

    key_conv, value_conv, header_conv = JsonConverter(), JsonConverter(), JsonConverter()
    key_conv.configure({}, is_key=True)
    value_conv.configure({}, is_key=False)
    chain = TransformationChain()
    convert = WorkerSourceTask._convert
    produced: list = []

    def convert_stream() -> None:
        produced[:] = [convert(r, None, key_conv, value_conv, header_conv, chain)[1]  # type: ignore[arg-type, index]
                       for r in streamed]

    def convert_snapshot() -> None:
        produced[:] = [convert(r, None, key_conv, value_conv, header_conv, chain)[1]  # type: ignore[arg-type, index]
                       for r in snapshot]

    tmp = tempfile.mkdtemp(prefix="ferry-bench-cdc-stages-")
    backend = EmbeddedBackend(f"{tmp}/data")
    try:
        backend.create_topic("bench.public.bench", 1)

        def produce() -> None:
            for at in range(0, len(produced), 2048):
                backend.produce("bench.public.bench", produced[at:at + 2048])

        def send(records: list) -> None:
            first = convert(records[0], None, key_conv, value_conv, header_conv, chain)[1]  # type: ignore[arg-type, index]
            run = max(1, SEND_RUN_BYTES // (len(first.key) + len(first.value) + 1))
            for at in range(0, len(records), run):
                backend.produce("bench.public.bench", [
                    convert(r, None, key_conv, value_conv, header_conv, chain)[1]  # type: ignore[arg-type, index]
                    for r in records[at:at + run]])

        result = {"records": n}
        for name, run in (("decode", decode), ("stream", stream_records),
                          ("snapshot", snapshot_records), ("convert_stream", convert_stream),
                          ("convert_snapshot", convert_snapshot), ("produce", produce),
                          ("send_stream", lambda: send(streamed)),
                          ("send_snapshot", lambda: send(snapshot))):
            result[f"{name}_cpu_us_per_record"] = _best(run, args.repeats, n)
        result["value_bytes"] = len(produced[0].value)
        print(json.dumps(result, indent=2))
    finally:
        backend.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
