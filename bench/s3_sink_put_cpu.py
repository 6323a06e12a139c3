"""The S3 sink task's own CPU per record: ``put()`` of already converted 1 KiB JSON records
(JsonFormat, DefaultPartitioner, ``flush.size`` 10,000, 5 MiB parts) against moto_server,
measured with ``time.thread_time()`` on the task's thread only. Parts and batches go up
on the task's upload thread as in the worker; neither that thread's CPU nor the
framework's (consuming, converting: see connect_record_path.py) is counted, so the figure
hardly moves with the machine's load.

Run from the repository root (a script, not a test):

    python3 bench/s3_sink_put_cpu.py [--records 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import boto3  # noqa: E402
import orjson  # noqa: E402
from s3_sink_throughput import FLUSH, PART, event, start_moto  # noqa: E402

from connect.api import SinkRecord, SinkTaskContext, TopicPartition  # noqa: E402
from connect.runtime.process_tuning import tune_gc_for_record_streams  # noqa: E402
from connectors.s3.task import S3SinkTask  # noqa: E402


class Context(SinkTaskContext):
    """What the worker's context gives the task, for one partition and no error reporter."""

    def configs(self) -> dict[str, str]:
        return {}

    def offsets(self, offsets: object) -> None:
        pass

    def timeout(self, timeout_ms: int) -> None:
        pass

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset({TopicPartition("t", 0)})

    def pause(self, *partitions: TopicPartition) -> None:
        pass

    def resume(self, *partitions: TopicPartition) -> None:
        pass

    def request_commit(self) -> None:
        pass

    def errant_record_reporter(self) -> None:
        return None


def one_run(url: str, records: Sequence[SinkRecord]) -> float:
    """Microseconds of the task thread's CPU per record, for ``put()`` in batches of 500
    (the worker's ``max.poll.records``) and a last, empty, one that waits for the uploads."""
    task = S3SinkTask()
    task.initialize(Context())
    task.start({"s3.bucket.name": "cpu", "store.url": url, "s3.region": "us-east-1",
                "aws.access.key.id": "x", "aws.secret.access.key": "x",
                "format.class": "JsonFormat", "flush.size": str(FLUSH),
                "s3.part.size": str(PART)})
    try:
        start = time.thread_time()
        for i in range(0, len(records), 500):
            task.put(records[i:i + 500])
        task.put([])
        return (time.thread_time() - start) / len(records) * 1e6
    finally:
        task.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tune_gc_for_record_streams()
    moto, url = start_moto(Path(tempfile.mkdtemp(prefix="s3cpu")))
    try:
        boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                     aws_access_key_id="x", aws_secret_access_key="x").create_bucket(
                         Bucket="cpu")
        # As JsonConverter (schemas.enable=false) hands them over: parsed with orjson.
        records = [SinkRecord(topic="t", kafka_partition=0, kafka_offset=i,
                              value=orjson.loads(orjson.dumps(event(i))))
                   for i in range(args.records)]
        one_run(url, records[:FLUSH])  # warm-up: imports, botocore's models
        runs = [one_run(url, records) for _ in range(args.repeats)]
    finally:
        moto.kill()
        moto.wait()
    print(f"S3 sink put(), task thread CPU per 1 KiB JSON record: "
          f"{', '.join(f'{r:.2f}' for r in runs)} µs ({args.records} records per run)")


if __name__ == "__main__":
    main()
