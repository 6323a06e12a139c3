"""Postgres CDC source throughput: snapshot rows/s and streaming changes/s end to end,
against the raw speed of reading and decoding the same changes from a slot.

Run from the repository root (a script, not a test; needs PostgreSQL's server binaries,
as the tests do):

    python3 bench/postgres_cdc.py [--rows 1000000] [--batch 2048]

One PostgreSQL (``tests/postgres_process.py``) and one ``ferry connect standalone``
(``embedded:`` log, JsonConverter with schemas, the default offset flush) run:

1. **snapshot**: a table of ``--rows`` rows (int key, text, int, timestamptz); the
   connector is POSTed and timed until its stored offset says the snapshot completed.
   Reference: the same rows read through a server-side cursor as text, no conversion.
2. **streaming**: the connector is paused; ``--rows`` rows are inserted (one
   transaction) and all updated (another), then a marker row; the connector is resumed
   and timed until its offset reaches the marker's transaction (2 x rows changes).
3. **raw slot read**, the limit, on a second slot created before those writes: the same
   changes read with the streaming replication protocol and decoded (pgoutput messages
   and tuples, no Connect), the path the connector uses; and for the record the SQL
   interface (``pg_logical_slot_peek_binary_changes`` in batches, then advance) on a
   third slot, the alternative it does not use.

With ``--connector-only`` no worker runs: the task is driven in this process (``poll()``
in a loop, offsets "stored" by a fake store, no converter, no log, the worker's garbage
collector thresholds), so the figures are the connector's own cost per row (snapshot and
streaming of the same writes), beside the raw slot read of the same changes. With
``--in-process`` each polled batch also goes through the worker's record path (its
``_convert`` with JsonConverter key and value, then produce to an ``embedded:`` log),
still on the one thread: the worker's work without the worker, its REST server and the
bench's offset polling.

Each phase reports the CPU time per row of the worker process (all its threads) and of
PostgreSQL (the postmaster and its backends and walsenders), and ``other_load_cores``:
how many cores everything else on the machine kept busy meanwhile. On a shared machine
the wall-clock rates fall with that load; the CPU per row stays comparable between
runs, and ``1e6 / worker_cpu_us_per_row`` is the rate the worker reaches with a core to
itself. ``worker_sys_us_per_row`` is the part of the worker's CPU spent in the kernel,
mostly copying the log's writes into the page cache (which in a VM that hands out guest
memory on first touch costs several times what it does on reused pages: see
``core/log/page_cache.py``). ``page_cache_write_*`` measures that floor in the same run:
the stream's bytes (the topic's growth during streaming) written by this process into a
new file in 256 kB writes, as the log writes them (with the topics'
``ferry.page.cache.window.bytes``), then removed; ``page_cache_write_no_window_*`` the
same with the page cache left to the kernel (``-1``, Kafka's way).
``raw_read_plus_write_changes_per_s`` is the rate of one thread
that read the changes as fast as the raw slot read and wrote their bytes as fast as that,
and ``streaming_vs_raw_read_plus_write`` compares the stream with it (for the record: the
issue's target is against the raw slot read alone).

``--page-cache-window -1`` creates the connector's topics with the page cache left to the
kernel (``ferry.page.cache.window.bytes``, Kafka's way) for a comparison with the default.

``--topic-compression lz4`` creates the connector's topics with that ``compression.type``
(``topic.creation.default.compression.type``, as Debezium's topic auto-creation example
sets lz4): the embedded log then stores lz4 batches, and a JsonConverter record with its
schema (~2.8 kB, mostly the repeated schema) takes a few percent of the bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import psycopg  # noqa: E402
from postgres_process import PASSWORD, PostgresProcess  # noqa: E402

from bench._cpu_accounting import machine_busy_s, process_cpu_s  # noqa: E402
from bench._servers import free_port  # noqa: E402
from bench.page_cache_write import page_cache_write  # noqa: E402
from connectors.postgres import pgoutput  # noqa: E402
from connectors.postgres.config import PostgresConfig  # noqa: E402
from connectors.postgres.replication import Keepalive, ReplicationConnection  # noqa: E402
from core.log.config import TopicConfig  # noqa: E402

NAME = "bench-cdc"
RAW_CPU_S = 0.0


def wait(cond, what: str, timeout: float = 1800.0, every: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(every)
    raise SystemExit(f"timed out waiting for {what}")


def offset(base: str) -> dict:
    try:
        found = requests.get(f"{base}/connectors/{NAME}/offsets", timeout=5).json()
    except (requests.RequestException, ValueError):
        return {}
    offsets = found.get("offsets") or []
    return offsets[0]["offset"] if offsets else {}


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid``, its live children and the children it reaped
    (PostgreSQL's postmaster: every backend and walsender, ended ones included)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # ppid
            total += (int(fields[11]) + int(fields[12])) / tick
    try:
        own = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return total
    return total + sum(int(v) for v in own[11:15]) / tick


class Accounting:
    """CPU of the worker, of PostgreSQL and of everything else on the machine over one
    timed phase, as shares of one core (the machine has ``os.cpu_count()``)."""

    def __init__(self, worker_pid: int | None, postmaster_pid: int) -> None:
        self.pids = (worker_pid, postmaster_pid)

    def __enter__(self) -> Accounting:
        self.start = (time.perf_counter(), self._worker(), tree_cpu_s(self.pids[1]),
                      machine_busy_s(), time.process_time())
        self.sys_start = self._worker_sys()
        return self

    def _worker(self) -> float:
        return process_cpu_s(self.pids[0]) if self.pids[0] is not None else 0.0

    def _worker_sys(self) -> float:
        """The worker's system CPU seconds: mostly its log's writes into the page cache."""
        if self.pids[0] is None:
            return 0.0
        try:
            own = Path(f"/proc/{self.pids[0]}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return int(own[12]) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        wall, worker, pg, busy, own = self.start
        self.wall = time.perf_counter() - wall
        self.worker_cpu = self._worker() - worker
        self.worker_sys = self._worker_sys() - self.sys_start
        self.pg_cpu = tree_cpu_s(self.pids[1]) - pg
        self.bench_cpu = time.process_time() - own
        self.other_cpu = max(0.0, machine_busy_s() - busy - self.worker_cpu - self.pg_cpu
                             - self.bench_cpu)

    def report(self, phase: str, count: int) -> dict:
        """Per-row CPU of the worker (all its threads) and PostgreSQL, and the load the
        rest of the machine put on it meanwhile (cores busy with anything else)."""
        return {f"{phase}_worker_cpu_us_per_row": round(self.worker_cpu / count * 1e6, 2),
                f"{phase}_worker_sys_us_per_row": round(self.worker_sys / count * 1e6, 2),
                f"{phase}_postgres_cpu_us_per_row": round(self.pg_cpu / count * 1e6, 2),
                f"{phase}_other_load_cores": round(self.other_cpu / self.wall, 2)}


def raw_stream(cfg: PostgresConfig, slot: str, until_xid: int) -> tuple[int, float]:
    """Changes decoded from ``slot`` until the commit of ``until_xid``; (count, s).
    ``RAW_CPU_S`` gets the CPU time it took in this process."""
    global RAW_CPU_S
    repl = ReplicationConnection(cfg)
    started, cpu_started = time.perf_counter(), time.process_time()
    repl.start(slot, cfg.publication_name, 0)
    changes, xid, done = 0, None, False
    while not done:
        for msg in repl.read(4096, 5.0):
            if isinstance(msg, Keepalive):
                continue
            m = pgoutput.decode(msg.payload)
            if isinstance(m, pgoutput.Begin):
                xid = m.xid
            elif isinstance(m, (pgoutput.Insert, pgoutput.Update, pgoutput.Delete)):
                changes += 1
            elif isinstance(m, pgoutput.Commit) and xid == until_xid:
                done = True
    elapsed = time.perf_counter() - started
    RAW_CPU_S = time.process_time() - cpu_started
    repl.close()
    return changes, elapsed


def dir_bytes(path: Path) -> int:
    """Bytes of the ``.log`` segment files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*.log"))


def raw_sql(dsn: str, slot: str, pub: str, until_lsn: str) -> tuple[int, float]:
    """The SQL interface: peek up to 10,000 changes, decode, advance; repeat."""
    started = time.perf_counter()
    changes = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            rows = conn.execute(
                "SELECT lsn, data FROM pg_logical_slot_peek_binary_changes(%s, %s, 10000,"
                " 'proto_version', '1', 'publication_names', %s)",
                (slot, until_lsn, pub)).fetchall()
            if not rows:
                break
            for _, data in rows:
                m = pgoutput.decode(bytes(data))
                if isinstance(m, (pgoutput.Insert, pgoutput.Update, pgoutput.Delete)):
                    changes += 1
            conn.execute("SELECT pg_replication_slot_advance(%s, %s)", (slot, rows[-1][0]))
    return changes, time.perf_counter() - started


def connector_only(pg: PostgresProcess, config: dict[str, str], n: int,
                   data_dir: Path | None = None) -> dict:
    """The task alone: snapshot, then the 2n + 1 streamed changes, ``poll()`` until every
    record is returned; the raw slot read of the same changes as the limit. With
    ``data_dir``, every batch also takes the worker's record path: ``_convert``
    (JsonConverter key and value, with schemas) and produce to an ``embedded:`` log there
    (``--in-process``: the worker's work on the task thread, without the worker)."""
    sys.path.insert(0, str(REPO / "tests" / "unit" / "connectors"))
    from conn_fakes import FakeOffsetStore, FakeSourceTaskContext

    from connect.runtime.process_tuning import tune_gc_for_record_streams
    from connectors.postgres import PostgresSourceTask

    tune_gc_for_record_streams()  # as the worker process does (`ferry connect`)
    props = {**config, "poll.interval.ms": "100"}
    task = PostgresSourceTask()
    task.initialize(FakeSourceTaskContext(props, FakeOffsetStore()))
    task.start(props)

    cpu: dict[str, float] = {}
    send, close = (None, None) if data_dir is None else _record_path(data_dir)

    def drain(count: int, phase: str) -> float:
        got, started, cpu_started = 0, time.perf_counter(), time.process_time()
        deadline = time.monotonic() + 1800
        while got < count and time.monotonic() < deadline:
            records = task.poll()
            if records:
                got += len(records)
                if send is not None:
                    send(records)
        if got < count:
            raise SystemExit(f"the task returned {got} records of {count}")
        cpu[phase] = time.process_time() - cpu_started
        return time.perf_counter() - started

    try:
        snapshot_s = drain(n, "snapshot")
        task.poll()  # the stream starts: its slot position is before the writes
        dsn = pg.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_create_logical_replication_slot('raw', 'pgoutput')")
            conn.execute("INSERT INTO bench (id, name, qty) SELECT g, 'new-' || g, 1 FROM "
                         "generate_series(%s, %s) g", (n + 1, 2 * n))
            conn.execute("UPDATE bench SET qty = qty + 1 WHERE id > %s", (n,))
            marker = conn.execute("INSERT INTO bench (id, name, qty) VALUES (0, 'marker', 0)"
                                  " RETURNING txid_current()").fetchone()[0]
        changes = 2 * n + 1
        stream_s = drain(changes, "stream")
    finally:
        task.stop()
        if close is not None:
            close()
    raw_changes, raw_s = raw_stream(PostgresConfig.parse(config), "raw", marker)
    return {
        "rows": n,
        "connector_only_snapshot_rows_per_s": round(n / snapshot_s),
        "connector_only_snapshot_us_per_row": round(snapshot_s / n * 1e6, 2),
        # CPU time of this process (the task and psycopg), steadier on a loaded machine.
        "connector_only_snapshot_cpu_us_per_row": round(cpu["snapshot"] / n * 1e6, 2),
        "connector_only_streaming_changes_per_s": round(changes / stream_s),
        "connector_only_streaming_us_per_change": round(stream_s / changes * 1e6, 2),
        "connector_only_streaming_cpu_us_per_change": round(cpu["stream"] / changes * 1e6,
                                                            2),
        "raw_slot_stream_changes_per_s": round(raw_changes / raw_s),
        "raw_slot_us_per_change": round(raw_s / raw_changes * 1e6, 2),
        "raw_slot_cpu_us_per_change": round(RAW_CPU_S / raw_changes * 1e6, 2),
        "connector_only_streaming_vs_raw": round((changes / stream_s) / (raw_changes / raw_s),
                                                 3),
    }


def _record_path(data_dir: Path):
    """``(send(records), close())``: what the worker does with a polled batch (``_convert`` with
    JsonConverter key and value, then one produce per topic to an ``embedded:`` log)."""
    from connect.converters.json import JsonConverter
    from connect.runtime.worker_source_task import WorkerSourceTask
    from connect.transforms.chain import TransformationChain
    from core.backends.embedded import EmbeddedBackend

    key_conv, value_conv, header_conv = JsonConverter(), JsonConverter(), JsonConverter()
    key_conv.configure({}, is_key=True)
    value_conv.configure({}, is_key=False)
    chain = TransformationChain()
    convert = WorkerSourceTask._convert
    backend = EmbeddedBackend(str(data_dir))
    created: set[str] = set()

    def send(records) -> None:
        by_topic: dict[str, list] = {}
        for record in records:
            topic, produced = convert(record, None, key_conv, value_conv,  # type: ignore[arg-type, misc]
                                      header_conv, chain)
            by_topic.setdefault(topic, []).append(produced)
        for topic, batch in by_topic.items():
            if topic not in created:
                backend.create_topic(topic, 1)
                created.add(topic)
            backend.produce(topic, batch)
    return send, backend.close


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=2048, help="max.batch.size")
    parser.add_argument("--skip-sql", action="store_true",
                        help="skip the SQL-interface comparison")
    parser.add_argument("--connector-only", action="store_true",
                        help="drive the task in-process, no worker or converter: the "
                             "connector's own cost per row")
    parser.add_argument("--in-process", action="store_true",
                        help="as --connector-only, plus the worker's record path (converter "
                             "and log) on the same thread, without the worker")
    parser.add_argument("--topic-compression", choices=["lz4", "zstd", "snappy", "gzip"],
                        help="create the connector's topics with this compression.type "
                             "(KIP-158's topic.creation.default.compression.type)")
    parser.add_argument("--page-cache-window", type=int, metavar="BYTES",
                        help="create the connector's topics with this "
                             "ferry.page.cache.window.bytes (-1: the kernel's page cache, "
                             "as Kafka)")
    args = parser.parse_args()
    n = args.rows
    pg = PostgresProcess()
    pg.start()
    tmp = Path(tempfile.mkdtemp(prefix="ferry-bench-cdc-"))
    worker = None
    try:
        dsn = pg.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE bench (id int PRIMARY KEY, name text, qty int, "
                         "at timestamptz DEFAULT now())")
            conn.execute("INSERT INTO bench (id, name, qty) SELECT g, 'name-' || g, g %% 100 "
                         "FROM generate_series(1, %s) g", (n,))
            conn.execute("VACUUM ANALYZE bench")
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1]
                         .split()[1])
        config = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                  "database.hostname": "127.0.0.1", "database.port": str(pg.port),
                  "database.user": "postgres", "database.password": PASSWORD,
                  "database.dbname": "postgres", "topic.prefix": "bench",
                  "table.include.list": "public.bench",
                  "publication.autocreate.mode": "filtered",
                  "max.batch.size": str(args.batch), "max.queue.size": str(args.batch * 4),
                  "topic.creation.default.partitions": "1",
                  "topic.creation.default.replication.factor": "1"}
        if args.topic_compression:
            config["topic.creation.default.compression.type"] = args.topic_compression
        window = TopicConfig().page_cache_window_bytes
        if args.page_cache_window is not None:
            window = args.page_cache_window
            config["topic.creation.default.ferry.page.cache.window.bytes"] = str(window)
        cfg = PostgresConfig.parse(config)
        if args.connector_only or args.in_process:
            result = connector_only(pg, config, n, tmp / "data" if args.in_process else None)
            if args.in_process:
                result = {k.replace("connector_only", "in_process"): v
                          for k, v in result.items()}
            print(json.dumps(result, indent=2))
            return
        # Reference for the snapshot: the rows through a server-side cursor, as text.
        with psycopg.connect(dsn) as conn:
            started = time.perf_counter()
            with conn.cursor(name="ref") as cur:
                cur.itersize = 10240
                cur.execute("SELECT id::text, name, qty::text, at::text FROM bench")
                rows = sum(1 for _ in cur)
            ref_snapshot = time.perf_counter() - started
        assert rows == n
        (tmp / "worker.properties").write_text(
            "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "offset.storage.partitions=1\noffset.flush.interval.ms=1000\n")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        log = open(tmp / "worker.log", "wb")  # noqa: SIM115 - owned by the process
        worker = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "connect", "standalone", "--log",
             f"embedded:{tmp / 'data'}", "--rest", f"127.0.0.1:{port}",
             str(tmp / "worker.properties")], stdout=log, stderr=subprocess.STDOUT, env=env)

        def healthy() -> bool:
            try:
                return requests.get(base + "/health", timeout=2).status_code == 200
            except requests.RequestException:
                return False
        wait(healthy, "the worker")
        # The offsets are stored every second (offset.flush.interval.ms): asking every
        # 0.1 s costs the worker little and the figures at most 0.1 s.
        with Accounting(worker.pid, postmaster) as snap_cpu:
            requests.post(base + "/connectors", json={"name": NAME, "config": config},
                          timeout=30).raise_for_status()
            wait(lambda: offset(base).get("snapshot_completed"), "the snapshot", every=0.1)
        snapshot_s = snap_cpu.wall
        snapshot_bytes = dir_bytes(tmp / "data")
        # Streaming: the raw slots exist before the writes.
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_create_logical_replication_slot('raw', 'pgoutput')")
            if not args.skip_sql:
                conn.execute("SELECT pg_create_logical_replication_slot('rawsql', "
                             "'pgoutput')")
        requests.put(f"{base}/connectors/{NAME}/pause", timeout=10).raise_for_status()
        time.sleep(1.5)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO bench (id, name, qty) SELECT g, 'new-' || g, 1 FROM "
                         "generate_series(%s, %s) g", (n + 1, 2 * n))
            conn.execute("UPDATE bench SET qty = qty + 1 WHERE id > %s", (n,))
            marker = conn.execute("INSERT INTO bench (id, name, qty) VALUES (0, 'marker', 0)"
                                  " RETURNING txid_current()").fetchone()[0]
            end_lsn = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        with Accounting(worker.pid, postmaster) as stream_cpu:
            requests.put(f"{base}/connectors/{NAME}/resume", timeout=10).raise_for_status()
            wait(lambda: offset(base).get("txId") == marker, "the marker's offset",
                 every=0.1)
        stream_s = stream_cpu.wall
        changes = 2 * n + 1
        with Accounting(None, postmaster) as raw_cpu:
            raw_changes, raw_s = raw_stream(cfg, "raw", marker)
        assert raw_changes == changes, (raw_changes, changes)
        # The log's own floor: writing the stream's bytes into the page cache, no Connect.
        stream_bytes = dir_bytes(tmp / "data") - snapshot_bytes
        write_s, write_sys_s, _ = page_cache_write(tmp / "page-cache-write", stream_bytes, window)
        kernel_s, kernel_sys_s, _ = page_cache_write(tmp / "page-cache-write", stream_bytes, -1)
        raw_plus_write = changes / (raw_s / raw_changes * changes + write_s)
        sql_result = None if args.skip_sql else raw_sql(dsn, "rawsql", cfg.publication_name,
                                                        end_lsn)
        result = {
            "rows": n,
            "snapshot_rows_per_s": round(n / snapshot_s),
            "snapshot_reference_cursor_rows_per_s": round(n / ref_snapshot),
            "streaming_changes_per_s": round(changes / stream_s),
            "raw_slot_stream_changes_per_s": round(raw_changes / raw_s),
            "streaming_vs_raw": round((changes / stream_s) / (raw_changes / raw_s), 3),
            **snap_cpu.report("snapshot", n),
            **stream_cpu.report("streaming", changes),
            "raw_slot_cpu_us_per_change": round(RAW_CPU_S / raw_changes * 1e6, 2),
            **raw_cpu.report("raw", raw_changes),
            "stream_log_bytes_per_change": round(stream_bytes / changes),
            "page_cache_write_us_per_change": round(write_s / changes * 1e6, 2),
            "page_cache_write_sys_us_per_change": round(write_sys_s / changes * 1e6, 2),
            "page_cache_write_no_window_us_per_change": round(kernel_s / changes * 1e6, 2),
            "page_cache_write_no_window_sys_us_per_change":
                round(kernel_sys_s / changes * 1e6, 2),
            "raw_read_plus_write_changes_per_s": round(raw_plus_write),
            "streaming_vs_raw_read_plus_write": round((changes / stream_s) / raw_plus_write, 3),
            "load_average_1m_at_end": round(os.getloadavg()[0], 1),
            "topic_compression": args.topic_compression or "producer (none)",
            "page_cache_window_bytes": window,
        }
        del result["raw_worker_cpu_us_per_row"]
        if sql_result is not None:
            result["raw_sql_interface_changes_per_s"] = round(sql_result[0] / sql_result[1])
        print(json.dumps(result, indent=2))
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                worker.kill()
        pg.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
