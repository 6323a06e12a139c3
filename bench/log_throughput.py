"""Embedded produce/consume throughput through the LogBackend, against raw disk writes.

Run from the repository root:

    python3 bench/log_throughput.py [--dir DIR] [--records-100 N] [--records-1k N]

For 100-byte and 1 KiB values it measures, in one run and on one file system:

* produce: ``backend.produce(topic, 1,000 records)`` until N records are stored, then an
  fsync of the log's files (so both sides pay for getting the bytes to disk);
* raw sequential write: ``os.write`` of 1 MiB blocks of the same total size to a fresh
  file, then one fsync;
* consume: ``backend.fetch`` with the default fetch sizes from offset 0 to the end,
  touching every record.

Each case alternates the three ``--repeats`` times (each timed section starts after an
``os.sync()``) and reports medians: records/s, MB/s of log bytes written (payload plus
batch framing), and produce bandwidth as a share of raw write bandwidth. Record generation
happens before the clock starts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from core.backends import ProducerRecord, TopicPartition, open_backend

BATCH = 1000
MB = 1_000_000


def raw_write(directory: Path, total_bytes: int, block: int = 1 << 20) -> float:
    """Seconds to write ``total_bytes`` sequentially in ``block`` writes plus one fsync."""
    path = directory / "raw.bin"
    data = os.urandom(block)
    os.sync()  # start from clean page cache write-back, as the produce runs do
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        written = 0
        while written < total_bytes:
            written += os.write(fd, data)
        os.fsync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return elapsed


def fsync_dir_files(directory: Path) -> None:
    for path in directory.iterdir():
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def produce_run(data_dir: Path, batches: list[list[ProducerRecord]],
                records: int) -> tuple[float, int]:
    """Seconds to produce ``records`` in calls of 1,000 and fsync the log; and its bytes."""
    with open_backend(f"embedded:{data_dir}") as backend:
        backend.create_topic("bench", 1)
        os.sync()
        start = time.perf_counter()
        produced = 0
        i = 0
        while produced < records:
            backend.produce("bench", batches[i % len(batches)])
            produced += BATCH
            i += 1
        # The raw reference pays for an fsync; so does the log.
        fsync_dir_files(data_dir / "bench-0")
        elapsed = time.perf_counter() - start
    log_bytes = sum(p.stat().st_size for p in (data_dir / "bench-0").glob("*.log"))
    return elapsed, log_bytes


def consume_run(data_dir: Path, records: int) -> float:
    """Seconds to fetch and decode every record from offset 0 with default fetch sizes."""
    with open_backend(f"embedded:{data_dir}") as backend:
        tp = TopicPartition("bench", 0)
        start = time.perf_counter()
        offset = 0
        consumed = 0
        while offset < records:
            result = backend.fetch({tp: offset})[tp]
            for record in result.records:  # touch every record, as a consumer would
                consumed += record.value is not None
            offset = result.next_offset
        elapsed = time.perf_counter() - start
    if consumed != records:
        raise RuntimeError(f"consumed {consumed} records, expected {records}")
    return elapsed


def run_case(directory: Path, value_size: int, records: int, repeats: int) -> dict[str, float]:
    """Alternate raw writes and produce runs ``repeats`` times; report medians."""
    batches = [
        [ProducerRecord(value=os.urandom(value_size)) for _ in range(BATCH)]
        for _ in range(min(64, records // BATCH))
    ]
    produce_s, raw_s, consume_s = [], [], []
    log_bytes = 0
    for i in range(repeats):
        data_dir = directory / f"data-{value_size}-{i}"
        seconds, log_bytes = produce_run(data_dir, batches, records)
        produce_s.append(seconds)
        raw_s.append(raw_write(directory, log_bytes))
        consume_s.append(consume_run(data_dir, records))
        shutil.rmtree(data_dir)
    produce_med = statistics.median(produce_s)
    raw_med = statistics.median(raw_s)
    consume_med = statistics.median(consume_s)
    return {
        "value_bytes": value_size,
        "records": records,
        "log_bytes": log_bytes,
        "repeats": repeats,
        "produce_records_per_s": records / produce_med,
        "produce_MB_per_s": log_bytes / produce_med / MB,
        "consume_records_per_s": records / consume_med,
        "consume_MB_per_s": log_bytes / consume_med / MB,
        "raw_write_MB_per_s": log_bytes / raw_med / MB,
        "produce_vs_raw": raw_med / produce_med,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where to write (default: a temp dir under the CWD)")
    parser.add_argument("--records-100", type=int, default=1_000_000)
    parser.add_argument("--records-1k", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3,
                        help="alternating raw/produce/consume rounds per case; medians reported")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    base = Path(args.dir) if args.dir else Path.cwd()
    base.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="ferry-bench-", dir=base))
    try:
        results = [run_case(directory, 100, args.records_100, args.repeats),
                   run_case(directory, 1024, args.records_1k, args.repeats)]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'value':>6} {'records':>9} {'produce rec/s':>14} {'produce MB/s':>13} "
          f"{'consume rec/s':>14} {'consume MB/s':>13} {'raw MB/s':>9} {'produce/raw':>11}")
    for r in results:
        print(f"{r['value_bytes']:>6} {r['records']:>9} {r['produce_records_per_s']:>14,.0f} "
              f"{r['produce_MB_per_s']:>13,.1f} {r['consume_records_per_s']:>14,.0f} "
              f"{r['consume_MB_per_s']:>13,.1f} {r['raw_write_MB_per_s']:>9,.1f} "
              f"{r['produce_vs_raw']:>11.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
