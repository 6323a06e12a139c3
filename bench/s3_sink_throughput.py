"""S3 sink throughput: topic to objects in moto_server, next to boto3 uploading the same
bytes and the Connect framework's no-op sink over the same topic.

Run from the repository root (a script, not a test):

    python3 bench/s3_sink_throughput.py [--records 50000] [--repeats 3]
        [--formats json,avro,parquet] [--dir DIR]

For each format (1 KiB JSON records through JsonFormat; the same records with a schema
through AvroFormat and ParquetFormat), in the same run:

* **s3 sink**: a ``StandaloneHerder`` runs the S3 sink (one task, ``flush.size`` 10,000,
  ``s3.part.size`` 5 MiB) on an ``embedded:`` topic that already holds every record; timed
  from the connector's creation until the consumer group's committed offset reaches the
  end (every object uploaded, start-up included).
* **boto3 upload** (the limit): the objects the sink wrote, read back and uploaded again
  with boto3's ``upload_fileobj`` (multipart in 5 MiB parts, as the sink) to another key.
* **no-op sink** (the framework): a sink task that only counts records, same topic and
  converter, timed the same way.

moto_server keeps objects in memory and runs on the same two cores, so the "limit" is the
local S3 API's speed, not the network's.

Before the repeats, each connector runs once untimed on a 10,000-record topic (the first
task of a worker imports boto3, fastavro, pyarrow and loads botocore's models). Each
repeat runs the three back to back and prints its own row: the ratios of a row come
from timings seconds apart, which on a shared machine is steadier than a ratio of
medians. Each row also gives the CPU seconds (this process, all threads, plus
moto_server) per MB of objects, and the CPU every other process took meanwhile ("other
load", in cores): the CPU figures hardly depend on the load, the wall times do.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import boto3  # noqa: E402
import botocore.config  # noqa: E402
from boto3.s3.transfer import TransferConfig  # noqa: E402

from connect.api import ConfigDef, SinkConnector, SinkRecord, SinkTask  # noqa: E402
from connect.runtime.plugins import Plugins  # noqa: E402
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connect.runtime.standalone_herder import StandaloneHerder  # noqa: E402
from connect.runtime.worker import Worker  # noqa: E402
from connect.runtime.worker_config import WorkerConfig  # noqa: E402
from core.backends import ProducerRecord, TopicPartition, open_backend  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from _cpu_accounting import Timed, timed  # noqa: E402

FLUSH = 10_000
PART = 5 * 1024 * 1024
SCHEMA = {"type": "struct", "name": "bench.Event", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "user", "type": "string", "optional": False},
    {"field": "score", "type": "double", "optional": False},
    {"field": "payload", "type": "string", "optional": False}]}


class NoopTask(SinkTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        pass

    def stop(self) -> None:
        pass


class NoopSink(SinkConnector):
    def version(self) -> str:
        return "1"

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type:
        return NoopTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self._props]

    def stop(self) -> None:
        pass


def event(i: int) -> dict[str, Any]:
    """About 1 KiB as JSON."""
    return {"id": i, "user": f"user-{i % 997}", "score": i * 0.5,
            "payload": ("abcdefghij" * 95)[: 950 - len(str(i))]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    exe = shutil.which("moto_server") or "moto_server"
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("moto_server did not start")


def run_connector(herder: StandaloneHerder, backend: Any, name: str, config: dict[str, str],
                  topic: str, n: int) -> float:
    tp = TopicPartition(topic, 0)
    t0 = time.perf_counter()
    herder.put_connector_config(name, {**config, "topics": topic}, allow_replace=False)
    while True:
        got = backend.fetch_offsets(f"connect-{name}", [tp]).get(tp)
        if got is not None and got.offset >= n:
            break
        time.sleep(0.01)
    elapsed = time.perf_counter() - t0
    herder.delete_connector(name)
    return elapsed


def fill(backend: Any, topic: str, n: int, with_schema: bool) -> None:
    """A one-partition topic of ``n`` records of about 1 KiB (in a schema envelope)."""
    backend.create_topic(topic, 1)
    for start in range(0, n, 1000):
        values = [json.dumps({"schema": SCHEMA, "payload": event(i)} if with_schema
                             else event(i)).encode()
                  for i in range(start, min(start + 1000, n))]
        backend.produce(topic, [ProducerRecord(value=v, partition=0) for v in values])


def s3_config(bucket: str, url: str, fmt: str, conv: dict[str, str]) -> dict[str, str]:
    cls = {"json": "JsonFormat", "avro": "AvroFormat", "parquet": "ParquetFormat"}[fmt]
    return {"connector.class": "s3", "s3.bucket.name": bucket, "store.url": url,
            "s3.region": "us-east-1", "aws.access.key.id": "x", "aws.secret.access.key": "x",
            "format.class": cls, "flush.size": str(FLUSH), "s3.part.size": str(PART), **conv}


def upload(client: Any, bucket: str, blobs: list[bytes]) -> float:
    """The limit: the same bytes uploaded as the sink does (5 MiB parts, one at a time)."""
    transfer = TransferConfig(multipart_threshold=PART, multipart_chunksize=PART,
                              max_concurrency=1, use_threads=False)
    t0 = time.perf_counter()
    for i, blob in enumerate(blobs):
        client.upload_fileobj(io.BytesIO(blob), bucket, f"raw/{i}", Config=transfer)
    return time.perf_counter() - t0


def cpu_s(t: Timed) -> float:
    """CPU seconds of this process and moto_server during ``t``."""
    return (t.server_cpu + t.client_cpu) * t.window_s


def cpu_ms(t: Timed, mb: float) -> str:
    """``total (moto_server's part)``, CPU ms per MB of objects."""
    return f"{cpu_s(t) * 1000 / mb:.1f} ({t.server_cpu * t.window_s * 1000 / mb:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--formats", default="json,avro,parquet",
                    help="comma-separated, of json, avro, parquet")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    n = args.records - args.records % FLUSH
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if not formats or set(formats) - {"json", "avro", "parquet"}:
        raise SystemExit("--formats: a comma-separated list of json, avro, parquet")
    tune_gc_for_record_streams()
    tmp = Path(args.dir or tempfile.mkdtemp(prefix="s3bench"))
    moto, url = start_moto(tmp)
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id="x", aws_secret_access_key="x",
                          config=botocore.config.Config(s3={"addressing_style": "path"}))
    backend = open_backend(f"embedded:{tmp / 'log'}")
    load0 = os.getloadavg()[0]
    rows: list[tuple[str, int, int, Timed, Timed, Timed]] = []
    try:
        cfg = WorkerConfig.from_props({"offset.flush.interval.ms": "200",
                                       "offset.storage.partitions": "1"})
        herder = StandaloneHerder(Worker(backend, cfg, Plugins({"NoopSink": NoopSink})),
                                  "127.0.0.1:0")
        herder.start()
        with_schemas = {"json": False, "avro": True, "parquet": True}
        for fmt in formats:
            fill(backend, fmt, n, with_schemas[fmt])
            fill(backend, f"warm-{fmt}", FLUSH, with_schemas[fmt])
        for fmt in formats:
            conv = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                    "value.converter.schemas.enable": str(with_schemas[fmt]).lower()}
            # Warm-up, not timed: the first task of a worker imports the connector's
            # modules (boto3, fastavro, pyarrow) and loads botocore's models once.
            client.create_bucket(Bucket=f"warm-{fmt}")
            run_connector(herder, backend, f"warm-{fmt}", s3_config(
                f"warm-{fmt}", url, fmt, conv), f"warm-{fmt}", FLUSH)
            run_connector(herder, backend, f"warm-noop-{fmt}", {
                "connector.class": "NoopSink", **conv}, f"warm-{fmt}", FLUSH)
            for r in range(args.repeats):
                bucket = f"b-{fmt}-{r}"
                client.create_bucket(Bucket=bucket)
                sink = timed(moto.pid, functools.partial(
                    run_connector, herder, backend, f"s3-{uuid.uuid4().hex[:6]}",
                    s3_config(bucket, url, fmt, conv), fmt, n))
                keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
                blobs = [client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys]
                raw = timed(moto.pid, functools.partial(upload, client, bucket, blobs))
                noop = timed(moto.pid, functools.partial(
                    run_connector, herder, backend, f"noop-{uuid.uuid4().hex[:6]}",
                    {"connector.class": "NoopSink", **conv}, fmt, n))
                rows.append((fmt, r, sum(map(len, blobs)), sink, raw, noop))
                for key in [*keys, *(f"raw/{i}" for i in range(len(blobs)))]:
                    client.delete_object(Bucket=bucket, Key=key)  # moto keeps them in RAM
        herder.stop()
    finally:
        backend.close()
        moto.kill()
        moto.wait()
    print(f"records per format: {n}, flush.size {FLUSH}, part size {PART}; load average "
          f"{load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print("| format | repeat | object MB | sink rec/s | sink MB/s | boto3 upload MB/s "
          "| sink / upload | no-op sink rec/s | sink / no-op | CPU ms per MB: sink, upload "
          "(moto_server's part), no-op | other load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for fmt, r, nbytes, sink, raw, noop in rows:
        mb = nbytes / 1e6
        other = statistics.mean(t.other_cpu for t in (sink, raw, noop))
        print(f"| {fmt} | {r + 1} | {mb:.1f} | {n / sink.seconds:,.0f} | "
              f"{mb / sink.seconds:.1f} | {mb / raw.seconds:.1f} | "
              f"{raw.seconds / sink.seconds:.0%} | {n / noop.seconds:,.0f} | "
              f"{noop.seconds / sink.seconds:.0%} | {cpu_ms(sink, mb)}, {cpu_ms(raw, mb)}, "
              f"{cpu_s(noop) * 1000 / mb:.1f} | {other:.1f} |")
    for fmt in formats:
        mine = [row for row in rows if row[0] == fmt]
        up = statistics.median(raw.seconds / sink.seconds for *_, sink, raw, _ in mine)
        nop = statistics.median(noop.seconds / sink.seconds for *_, sink, _, noop in mine)
        print(f"{fmt}: median of {len(mine)} repeats: sink / upload {up:.0%}, "
              f"sink / no-op {nop:.0%}")


if __name__ == "__main__":
    main()
