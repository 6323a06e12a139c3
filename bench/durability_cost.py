"""What ``ferry.acks.all.fsync`` (acks=all waits for a group-commit fsync) costs.

Run from the repository root:

    python3 bench/durability_cost.py [--quick] [--repeats 3] [--dir DIR]

Two workloads against a Ferry broker over the Kafka protocol (confluent-kafka), each with
``ferry.acks.all.fsync=false`` (Kafka's behaviour and Ferry's before it: acks=all is
answered from the page cache) and ``=true`` (the default now), plus acks=1 as a floor:

* bulk: one producer sends N 1 KiB values with ``produce_batch`` and ``flush()`` (the
  broker throughput benchmark's driver), messages/s from the first send to the last ack;
* request/response: C producers on C threads each send M messages one at a time, waiting
  for each acknowledgement (``linger.ms=0``, ``flush()`` after every message): acks/s
  summed over the producers. Here every request waits for its own fsync unless group
  commit lets one fsync serve the requests that arrived meanwhile; the run also measures
  how many 1 KiB append + fdatasync rounds the file system does per second (the limit with
  one fsync per acknowledgement) and reports the request/response rate against it.

Each repeat starts one fresh broker per setting, alternating their order, on the same file
system (``--dir``; the data directory's file system is printed: fsync cost is a property of
the disk). The table gives medians and the ratio of each case to the same workload with
``ferry.acks.all.fsync=false`` in the same repeats.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import _kafka_clients as kafka
from _servers import FerryBroker
from confluent_kafka import Producer

log = logging.getLogger("bench.durability_cost")

VALUE_SIZE = 1024
FULL = {"bulk_messages": 300_000, "clients": 16, "per_client": 1000}
FSYNC_PROBE_S = 2.0
QUICK_DIVISOR = 10
CASES = (  # (label, acks, ferry.acks.all.fsync)
    ("acks=1", "1", "true"),
    ("acks=all, no fsync", "all", "false"),
    ("acks=all + fsync", "all", "true"),
)
BASELINE = "acks=all, no fsync"


def request_response(bootstrap: str, topic: str, acks: str, clients: int,
                     per_client: int) -> float:
    """Acknowledged messages per second, ``clients`` producers each waiting for every ack."""
    value = os.urandom(VALUE_SIZE)
    failures: list[str] = []
    producers = [Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0,
                           "enable.idempotence": False}) for _ in range(clients)]
    for producer in producers:
        producer.list_topics(topic, timeout=kafka.METADATA_TIMEOUT_S)
    start_line = threading.Barrier(clients + 1)

    def run(producer: Producer, partition: int) -> None:
        def delivered(err, _msg) -> None:
            if err is not None:
                failures.append(str(err))

        start_line.wait()
        for _ in range(per_client):
            producer.produce(topic, value, partition=partition, on_delivery=delivered)
            if producer.flush(kafka.STALL_TIMEOUT_S):
                failures.append("flush timed out")
                return

    threads = [threading.Thread(target=run, args=(p, 0)) for p in producers]
    for t in threads:
        t.start()
    start_line.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise kafka.BenchmarkError(f"{len(failures)} failures, first: {failures[0]}")
    return clients * per_client / elapsed


def fsyncs_per_second(directory: Path) -> float:
    """How many append-1-KiB-then-fdatasync rounds this file system does per second: the
    most acks/s that one fsync per acknowledgement would allow."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        rounds, start = 0, time.perf_counter()
        while time.perf_counter() - start < FSYNC_PROBE_S:
            os.write(fd, bytes(VALUE_SIZE))
            os.fdatasync(fd)
            rounds += 1
        return rounds / (time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()


def run_case(work: Path, acks: str, fsync: str, args: argparse.Namespace) -> dict[str, float]:
    data_dir = work / f"broker-{uuid.uuid4().hex[:8]}"
    broker = FerryBroker(data_dir, {"ferry.acks.all.fsync": fsync})
    with broker:
        values = [os.urandom(VALUE_SIZE) for _ in range(256)]
        kafka.create_topic(broker.address, "bulk", 1)
        os.sync()
        bulk_s = kafka.confluent_produce(broker.address, "bulk", 1, values,
                                         args.bulk_messages, acks)
        kafka.create_topic(broker.address, "rr", 1)
        os.sync()
        rr = request_response(broker.address, "rr", acks, args.clients, args.per_client)
    shutil.rmtree(data_dir, ignore_errors=True)
    return {"bulk_msgs_per_s": args.bulk_messages / bulk_s, "rr_acks_per_s": rr}


def file_system(path: Path) -> str:
    done = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True, check=False)
    lines = done.stdout.splitlines()
    return " ".join(lines[-1].split()[:2]) if len(lines) > 1 else "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"1/{QUICK_DIVISOR} the work")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="work directory (default: a temp dir in CWD)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    divisor = QUICK_DIVISOR if args.quick else 1
    args.bulk_messages = FULL["bulk_messages"] // divisor
    args.clients = FULL["clients"]
    args.per_client = FULL["per_client"] // divisor
    base = args.dir or Path.cwd()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ferry-durability-bench-", dir=base))
    results: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in CASES}
    probes: list[float] = []
    try:
        for repeat in range(args.repeats):
            probes.append(fsyncs_per_second(work))
            order = CASES if repeat % 2 == 0 else tuple(reversed(CASES))
            for label, acks, fsync in order:
                results[label].append(run_case(work, acks, fsync, args))
                log.info("repeat %d %s: %s", repeat + 1, label, results[label][-1])
        fs = file_system(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {label: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
               for label, runs in results.items()}
    print(f"\n{'case':<22} {'bulk msg/s':>12} {'ratio':>6} {'req/resp acks/s':>16} {'ratio':>6}")
    for label, m in medians.items():
        b = medians[BASELINE]
        print(f"{label:<22} {m['bulk_msgs_per_s']:>12,.0f} "
              f"{m['bulk_msgs_per_s'] / b['bulk_msgs_per_s']:>6.2f} "
              f"{m['rr_acks_per_s']:>16,.0f} {m['rr_acks_per_s'] / b['rr_acks_per_s']:>6.2f}")
    fsync_rate = statistics.median(probes)
    group = medians["acks=all + fsync"]["rr_acks_per_s"] / fsync_rate
    print(f"\nfsync limit: {fsync_rate:,.0f} rounds/s of 1 KiB append + fdatasync on this file "
          f"system; request/response acks=all + fsync got {group:.1f}x that (group commit)")
    print(f"bulk: {args.bulk_messages:,} x {VALUE_SIZE} B, one producer, produce_batch; "
          f"request/response: {args.clients} producers x {args.per_client} messages, one "
          f"at a time; medians of {args.repeats} repeats; ratios against '{BASELINE}'")
    print(f"data directory file system: {fs}; python {platform.python_version()}; "
          f"{os.cpu_count()} cpus; {kafka.CLIENT_VERSION}")
    print(f"argv: {shlex.join(sys.argv)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
