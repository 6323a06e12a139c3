"""Rows/s of the JDBC sink (upserts) and source into and out of a real PostgreSQL, next to
psycopg itself doing the same work in the same run.

Run from the repository root (a script, not a test; needs Debian's ``postgresql``):

    python3 bench/jdbc_throughput.py [--rows 1000000] [--batch 3000] [--repeats 1]

It starts a PostgreSQL server from ``initdb`` (``tests/postgres_process.py``) and a table
of five columns (``id bigint`` primary key, ``name text``, ``qty integer``,
``price numeric(10,2)``, ``at timestamp``). Per repeat:

* **sink**: ``JdbcSinkTask.put`` of pre-built ``SinkRecord``s (Connect structs, as a
  converter hands them over) in calls of ``--batch`` records, ``insert.mode=upsert``,
  ``pk.mode=record_value``, ``batch.size=--batch``: the table is empty at the start, and
  a second pass upserts the same keys again (updates).
* **limit, executemany**: psycopg's ``cursor.executemany`` of the same
  ``INSERT ... ON CONFLICT (id) DO UPDATE`` with tuples, ``--batch`` rows per call and
  one commit per call; both passes again.
* **reference, COPY**: psycopg's ``COPY ... FROM STDIN`` of the same tuples into an empty
  table (plain inserts, no upsert: the fastest way in).
* **source**: ``JdbcSourceTask.poll`` in ``incrementing`` mode (``batch.max.rows=--batch``)
  until it has returned every row as a ``SourceRecord`` with a struct value. Its client
  CPU includes its prefetch thread's (``connectors/jdbc/prefetch.py``).
* **limit, plain SELECT**: a psycopg server-side cursor streaming
  ``SELECT * FROM t ORDER BY id`` in ``fetchmany(--batch)`` calls (the source's own
  access pattern: one FETCH per batch).
* **other limit, chunked stream**: the same SELECT through ``cursor.stream(size=--batch)``
  (libpq >= 17), where the server does not wait for the client between batches.

With ``--source-breakdown`` each repeat also splits the source's CPU time per row, in
the same process: fetching the rows through SQLAlchemy's result (Row objects) and straight
from its DBAPI cursor, then ``Struct.from_rows``, the offset maps and ``SourceRecord.many``
over the fetched rows, and the source's own generated batch builder (all together).
With ``--end-to-end`` each repeat also gives the CPU per row of the worker's steps for
those records: ``poll``, the JsonConverter with schemas (key and value), and the append
to an embedded log.

Before the reads, the sink's table is vacuumed, so that neither read pays for the
writes' hint bits and dead rows (the first read after them did).

The ratios printed (sink / executemany, source / SELECT) are what the issue's targets
are about (>= 30% and >= 50%). The reads' ratios are also given by CPU time, this
process's plus the server's (its client backends, from /proc): on a shared machine
wall time mostly measures the other processes. The process uses the gc thresholds a
Connect worker sets (``connect.runtime.process_tuning``) unless ``--default-gc`` is
given, and the sink's
records are dropped before the reads are timed (a worker does not hold millions of
records either).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import decimal
import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import psycopg  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from _cpu_accounting import backend_ticks, backends_cpu_s  # noqa: E402
from postgres_process import PostgresProcess  # noqa: E402

from connect.api import (  # noqa: E402
    Decimal,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Timestamp,
)
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connectors.jdbc import JdbcSinkTask, JdbcSourceTask  # noqa: E402
from connectors.jdbc.record_builder import batch_builder  # noqa: E402
from connectors.jdbc.types import identity  # noqa: E402

SCHEMA = (SchemaBuilder.struct().name("row").field("id", Schema.INT64_SCHEMA)
          .field("name", Schema.STRING_SCHEMA).field("qty", Schema.INT32_SCHEMA)
          .field("price", Decimal.schema(2)).field("at", Timestamp.SCHEMA).build())
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
DDL = ("CREATE TABLE {t} (id bigint PRIMARY KEY, name text NOT NULL, qty integer NOT NULL, "
       "price numeric(10,2) NOT NULL, at timestamp NOT NULL)")
UPSERT = ("INSERT INTO {t} (id, name, qty, price, at) VALUES (%s, %s, %s, %s, %s) "
          "ON CONFLICT (id) DO UPDATE SET name = excluded.name, qty = excluded.qty, "
          "price = excluded.price, at = excluded.at")


@dataclasses.dataclass(frozen=True)
class Cost:
    """One timed read: wall seconds, and CPU seconds of this process and of the server."""

    seconds: float
    client_cpu: float
    server_cpu: float

    @property
    def cpu(self) -> float:
        return self.client_cpu + self.server_cpu


class Meter:
    """Wall and CPU time from its creation to ``stop()`` (call it before closing the
    connection: a backend's CPU counts only while it runs)."""

    def __init__(self, pg: PostgresProcess) -> None:
        self._pid = pg.proc.pid  # type: ignore[union-attr]  # the postmaster
        self._wall, self._client = time.perf_counter(), time.process_time()
        self._server = backend_ticks(self._pid)

    def stop(self) -> Cost:
        return Cost(time.perf_counter() - self._wall, time.process_time() - self._client,
                    backends_cpu_s(self._server, backend_ticks(self._pid)))


def tuples(n: int, generation: int) -> list[tuple]:
    return [(i, f"name-{i}-{generation}", i % 1000, decimal.Decimal(i % 100000) / 100,
             (T0 + dt.timedelta(seconds=i)).replace(tzinfo=None)) for i in range(n)]


def records(rows: list[tuple]) -> list[SinkRecord]:
    out = []
    for offset, (i, name, qty, price, at) in enumerate(rows):
        value = Struct.from_values(SCHEMA, [i, name, qty, price, at.replace(tzinfo=dt.UTC)])
        out.append(SinkRecord(topic="bench", kafka_partition=0, kafka_offset=offset,
                              value_schema=SCHEMA, value=value))
    return out


class Context:
    """The minimal runtime context these tasks read (offsets; no reporter)."""

    def __init__(self, props):
        self._props = props

    def configs(self):
        return self._props

    def offset_storage_reader(self):
        return self

    def offset(self, partition):
        return None

    def errant_record_reporter(self):
        return None

    def timeout(self, ms):
        pass


def run_sink(pg: PostgresProcess, passes: list[list[SinkRecord]], batch: int) -> float:
    props = {"connection.url": pg.url(), "insert.mode": "upsert", "pk.mode": "record_value",
             "pk.fields": "id", "batch.size": str(batch), "table.name.format": "sink_t"}
    task = JdbcSinkTask()
    task.initialize(Context(props))  # type: ignore[arg-type]
    task.start(props)
    started = time.perf_counter()
    for recs in passes:
        for at in range(0, len(recs), batch):
            task.put(recs[at:at + batch])
    elapsed = time.perf_counter() - started
    task.stop()
    return elapsed


def run_executemany(pg: PostgresProcess, passes: list[list[tuple]], batch: int) -> float:
    with psycopg.connect(pg.dsn()) as conn:
        started = time.perf_counter()
        for rows in passes:
            for at in range(0, len(rows), batch):
                with conn.cursor() as cur:
                    cur.executemany(UPSERT.format(t="em_t"), rows[at:at + batch])
                conn.commit()
        return time.perf_counter() - started


def run_copy(pg: PostgresProcess, rows: list[tuple]) -> float:
    with psycopg.connect(pg.dsn()) as conn:
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(
                "COPY copy_t (id, name, qty, price, at) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        conn.commit()
        return time.perf_counter() - started


def run_source(pg: PostgresProcess, n: int, batch: int) -> Cost:
    props = {"connection.url": pg.url(), "mode": "incrementing",
             "incrementing.column.name": "id", "batch.max.rows": str(batch),
             "poll.interval.ms": "60000", "tables": json.dumps([["public", "sink_t"]])}
    task = JdbcSourceTask()
    task.initialize(Context(props))  # type: ignore[arg-type]
    task.start(props)
    seen = 0
    meter = Meter(pg)
    while seen < n:
        got = task.poll()
        seen += len(got or ())
    cost = meter.stop()
    task.stop()
    return cost


def run_select(pg: PostgresProcess, n: int, batch: int) -> Cost:
    with psycopg.connect(pg.dsn()) as conn:
        meter = Meter(pg)
        with conn.cursor(name="bench") as cur:
            cur.execute("SELECT * FROM sink_t ORDER BY id")
            seen = 0
            while chunk := cur.fetchmany(batch):
                seen += len(chunk)
        assert seen == n, seen
        return meter.stop()


def run_stream(pg: PostgresProcess, n: int, batch: int) -> Cost:
    """The same rows through a client-side cursor in libpq's chunked-rows mode: the server
    sends the result without waiting for a FETCH per batch, so its work overlaps the
    client's (psycopg >= 3.2 with libpq >= 17)."""
    with psycopg.connect(pg.dsn()) as conn:
        meter = Meter(pg)
        seen = 0
        for _ in conn.cursor().stream("SELECT * FROM sink_t ORDER BY id", size=batch):
            seen += 1
        assert seen == n, seen
        return meter.stop()


def source_breakdown(pg: PostgresProcess, n: int, batch: int) -> dict[str, float]:
    """CPU microseconds (this process's) per row of each part of the source's work (see
    the docstring): CPU time, because on a shared machine wall time mostly measures the
    other processes, and a fetch's wall time is mostly the server's."""
    engine = sa.create_engine(pg.url())
    table = sa.Table("sink_t", sa.MetaData(), autoload_with=engine)
    stmt = sa.select(table).where(table.c.id > -1).order_by(table.c.id)
    partition = {"protocol": "1", "table": "public.sink_t"}
    out: dict[str, float] = {}

    def fetch(raw: bool) -> list:
        batches: list = []
        with engine.connect() as conn:
            started = time.process_time()
            result = conn.execution_options(stream_results=True, yield_per=batch) \
                .execute(stmt)
            read = result.fetchmany
            if raw:
                # SQLAlchemy has read one row ahead into its buffer; the rest come from
                # the cursor as the driver's tuples.
                batches.append([tuple(result.fetchone())])
                read = result.cursor.fetchmany
            while rows := read(batch):
                batches.append(rows)
            elapsed = time.process_time() - started
        out["fetch, DBAPI cursor" if raw else "fetch, SQLAlchemy rows"] = elapsed / n * 1e6
        return batches

    fetch(raw=True)
    gc.collect()
    batches = fetch(raw=False)
    build = batch_builder(topic="bench", schema=SCHEMA, partition=partition, width=5,
                          indexes=range(5), converts=[identity] * 5, inc_index=0,
                          inc_needs_int=False)
    value = Struct.from_values(SCHEMA, batches[0][0], validate=False)
    parts = {
        "Struct.from_rows": lambda rows: Struct.from_rows(SCHEMA, rows),
        "offset maps": lambda rows: [{"incrementing": r[0]} for r in rows],
        "SourceRecord.many": lambda rows: SourceRecord.many(
            [value] * len(rows), [None] * len(rows), topic="bench", value_schema=SCHEMA,
            source_partition=partition),
        "batch builder (all)": lambda rows: build(rows, None),
    }
    for name, part in parts.items():
        started = time.process_time()
        for rows in batches:
            part(rows)
        out[name] = (time.process_time() - started) / n * 1e6
        gc.collect()
    engine.dispose()
    return out


def source_end_to_end(pg: PostgresProcess, n: int, batch: int) -> dict[str, float]:
    """CPU microseconds per row of the worker's steps for the source's records: ``poll``,
    the converters as the worker calls them (JsonConverter, ``schemas.enable=true``, for
    key and value; SimpleHeaderConverter), and the append to an embedded log
    (``core.backends.embedded``)."""
    import tempfile

    from connect.api.record import headers_or_none
    from connect.converters.header import SimpleHeaderConverter
    from connect.converters.json import JsonConverter
    from core.backends import ProducerRecord
    from core.backends.embedded import EmbeddedBackend

    key_conv, value_conv, header_conv = JsonConverter(), JsonConverter(), \
        SimpleHeaderConverter()
    key_conv.configure({"schemas.enable": "true"}, True)
    value_conv.configure({"schemas.enable": "true"}, False)
    props = {"connection.url": pg.url(), "mode": "incrementing",
             "incrementing.column.name": "id", "batch.max.rows": str(batch),
             "poll.interval.ms": "60000", "tables": json.dumps([["public", "sink_t"]])}
    task = JdbcSourceTask()
    task.initialize(Context(props))  # type: ignore[arg-type]
    task.start(props)
    spent = {"poll": 0.0, "converters": 0.0, "log append": 0.0}
    with tempfile.TemporaryDirectory() as log_dir:
        backend = EmbeddedBackend(log_dir)
        backend.create_topic("sink_t", 1)
        seen = 0
        while seen < n:
            t0 = time.process_time()
            records = task.poll() or []
            t1 = time.process_time()
            produced = []
            for r in records:
                # As the worker reads them: no Headers made for records without.
                raw = [(h.key, header_conv.from_connect_header(r.topic, h.key, h.schema,
                                                               h.value))
                       for h in headers_or_none(r) or ()]
                produced.append(ProducerRecord(
                    key_conv.from_connect_data(r.topic, r.key_schema, r.key, raw),
                    value_conv.from_connect_data(r.topic, r.value_schema, r.value, raw),
                    raw, r.timestamp, r.kafka_partition))
            t2 = time.process_time()
            backend.produce("sink_t", produced)
            t3 = time.process_time()
            spent["poll"] += t1 - t0
            spent["converters"] += t2 - t1
            spent["log append"] += t3 - t2
            seen += len(records)
        backend.close()
    task.stop()
    return {name: cpu / n * 1e6 for name, cpu in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--default-gc", action="store_true")
    parser.add_argument("--source-breakdown", action="store_true")
    parser.add_argument("--end-to-end", action="store_true")
    args = parser.parse_args()
    if not args.default_gc:
        tune_gc_for_record_streams()
    n, batch = args.rows, args.batch
    first, second = tuples(n, 0), tuples(n, 1)
    pg = PostgresProcess()
    pg.start()
    try:
        for repeat in range(1, args.repeats + 1):
            with psycopg.connect(pg.dsn(), autocommit=True) as conn:
                for t in ("sink_t", "em_t", "copy_t"):
                    conn.execute(f"DROP TABLE IF EXISTS {t}")
                    conn.execute(DDL.format(t=t))
            recs = [records(first), records(second)]
            sink = run_sink(pg, recs, batch)
            del recs
            gc.collect()
            many = run_executemany(pg, [first, second], batch)
            copy = run_copy(pg, first)
            with psycopg.connect(pg.dsn(), autocommit=True) as conn:
                # The first scan after the sink's two passes would otherwise set the hint
                # bits of 2N fresh row versions and prune half of them: that read (the
                # source's, as it comes first) paid for it, 3-5x its wall time per row at
                # 1,000,000 rows, where the table outgrows shared_buffers.
                conn.execute("VACUUM (ANALYZE) sink_t")
            source = run_source(pg, n, batch)
            select = run_select(pg, n, batch)
            stream = run_stream(pg, n, batch) if psycopg.pq.version() >= 170000 else None
            print(f"repeat {repeat}: {n:,} rows, batch {batch}")
            print(f"  sink upsert     {2 * n / sink:>12,.0f} rows/s")
            print(f"  executemany     {2 * n / many:>12,.0f} rows/s   sink/executemany = "
                  f"{many / sink:.0%}")
            print(f"  COPY (insert)   {n / copy:>12,.0f} rows/s")
            reads = [("source", source), ("plain SELECT", select)]
            if stream is not None:
                reads.append(("chunked stream", stream))
            for name, cost in reads:
                print(f"  {name:<15} {n / cost.seconds:>12,.0f} rows/s   CPU per row: client "
                      f"{cost.client_cpu / n * 1e6:.2f} us, server "
                      f"{cost.server_cpu / n * 1e6:.2f} us", flush=True)
            for name, cost in reads[1:]:
                print(f"  source / {name}: {cost.seconds / source.seconds:.0%} by wall time, "
                      f"{cost.cpu / source.cpu:.0%} by CPU (client + server)", flush=True)
            if args.source_breakdown:
                parts = source_breakdown(pg, n, batch)
                print("  source CPU per row: " + ", ".join(
                    f"{name} {us:.2f} us" for name, us in parts.items()), flush=True)
            if args.end_to_end:
                parts = source_end_to_end(pg, n, batch)
                print("  source end to end, CPU per row: " + ", ".join(
                    f"{name} {us:.2f} us" for name, us in parts.items()), flush=True)
    finally:
        pg.close()


if __name__ == "__main__":
    main()
