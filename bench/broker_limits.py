"""A well-behaved client's round-trip latency while a Ferry broker is under cheap attacks.

Run from the repository root:

    python3 bench/broker_limits.py [--trips 200]

One broker (every default) serves a confluent-kafka producer and consumer that produce one
record and read it back, ``--trips`` times per phase, one at a time. The phases:

* ``baseline``: nothing else;
* ``slow-loris``: 20 more connections have each announced a 100 MiB request and sent 4 bytes;
* ``100k partitions``: another client sends ListOffsets requests naming 100,000 partitions,
  one after another, for the whole phase;
* ``1000 idle``: 1,000 more connections are open and idle.

For each phase the table gives the median, 99th percentile and largest round trip in ms,
and the ratio of the median and of the largest to the baseline's, measured in the same run;
for slow-loris also how much the broker's resident memory grew (MiB, from /proc).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from _servers import FerryBroker
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer import ListOffsetsRequest

MiB = 1 << 20


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class RoundTrips:
    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.admin.create_topics([NewTopic("rt", 1, 1)])["rt"].result(30)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                                  "enable.auto.commit": False})
        self.consumer.assign([TopicPartition("rt", 0, OFFSET_BEGINNING)])
        self.sent = 0

    def once(self) -> float:
        value = str(self.sent).encode()
        self.sent += 1
        start = time.perf_counter()
        self.producer.produce("rt", value)
        self.producer.flush(60)
        while True:
            message = self.consumer.poll(1.0)
            if message is not None and not message.error() and message.value() == value:
                return time.perf_counter() - start

    def phase(self, trips: int) -> list[float]:
        return [self.once() for _ in range(trips)]


def big_list_offsets(port: int, stop: threading.Event) -> None:
    lt = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[lt(
        name="rt", partitions=[lt.ListOffsetsPartition(partition_index=p,
                                                        current_leader_epoch=-1, timestamp=-1)
                               for p in range(100_000)])])
    request.with_header(correlation_id=1, client_id="bench-big")
    frame = bytes(request.encode(version=7, header=True, framed=True))
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        reader = sock.makefile("rb")
        while not stop.is_set():
            sock.sendall(frame)
            (size,) = struct.unpack(">i", reader.read(4))
            reader.read(size)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", type=int, default=200)
    args = parser.parse_args()
    rows: list[tuple[str, list[float], str]] = []
    with tempfile.TemporaryDirectory() as tmp, FerryBroker(Path(tmp) / "data") as broker:
        trips = RoundTrips(broker.address)
        trips.phase(20)  # warm-up
        rows.append(("baseline", trips.phase(args.trips), ""))

        before = rss_mib(broker.pid)
        lorises = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(20)]
        for sock in lorises:
            sock.sendall(struct.pack(">i", 100 * MiB) + b"\0\0\0\1")
        latencies = trips.phase(args.trips)
        rows.append(("slow-loris", latencies, f"+{rss_mib(broker.pid) - before:.0f} MiB"))
        for sock in lorises:
            sock.close()

        stop = threading.Event()
        big = threading.Thread(target=big_list_offsets, args=(broker.port, stop))
        big.start()
        time.sleep(0.5)
        rows.append(("100k partitions", trips.phase(args.trips), ""))
        stop.set()
        big.join(60)

        idle = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(1000)]
        rows.append(("1000 idle", trips.phase(args.trips), ""))
        for sock in idle:
            sock.close()

    base_median = statistics.median(rows[0][1])
    base_max = max(rows[0][1])
    print(f"{'phase':<16} {'median':>8} {'p99':>8} {'max':>8} {'x median':>8} {'x max':>7}  memory")
    for name, values, note in rows:
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        print(f"{name:<16} {statistics.median(values) * 1000:8.1f} {p99 * 1000:8.1f} "
              f"{max(values) * 1000:8.1f} {statistics.median(values) / base_median:8.2f} "
              f"{max(values) / base_max:7.2f}  {note}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
