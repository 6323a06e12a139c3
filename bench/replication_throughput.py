"""Replication's cost and failover time: a 3-node Ferry cluster (RF=3, min.insync.replicas=2)
against a single Ferry node, in the same run.

Run from the repository root:

    python3 bench/replication_throughput.py [--quick] [--repeats 3] [--longer N] [--json]

What it measures:

* produce throughput with acks=all by confluent-kafka (``produce_batch`` then ``flush``,
  see ``_kafka_clients.confluent_produce``) to a fresh 3-partition topic, 100-byte and
  1 KiB values (200,000 and 60,000 messages; ``--quick``: 1/10 and one repeat), on the
  single node and on the cluster, both running throughout and measured alternately so
  that they see the same load; the median of the per-pair ratios cluster/single is
  reported against the issue's limit of 0.40 for 1 KiB, with the brokers' CPU per MB
  (all three nodes for the cluster), the cores they kept busy and the machine's other
  load during the runs (Linux /proc); with ``--roles``, the CPU per MB of the leader and
  of each follower of a 1-partition topic, against the single node's;
* end-to-end latency p50/p99 on the cluster: one message at a time with acks=all,
  from ``produce`` to its delivery report (the leader answers once the ISR has it);
* failover: a producer writes acks=all continuously; the leader of partition 0 is
  SIGKILLed; reported are the seconds from the kill to the first acknowledged write to
  partition 0 (on its new leader) and to every partition having a live leader in the
  metadata, against ``broker.session.timeout.ms`` + 2 s.

All nodes run on this machine, each a ``ferry broker`` process (the cluster's nodes are
``ferry broker --config`` with KRaft settings, as ``ferry up --brokers 3`` writes them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _cpu_accounting import client_cpu_s, machine_busy_s, process_cpu_s
from _kafka_clients import confluent_produce
from _servers import FerryBroker
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from core.cli.demo.processes import free_port
from core.cli.local_cluster import node_settings

SESSION_TIMEOUT_MS = 3000
LIMIT_1KIB = 0.40
SIZES = {100: 200_000, 1024: 60_000}


class Cluster:
    """Three ``ferry broker --config`` nodes on free ports; ``kill(node_id)`` is SIGKILL."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # Below the ephemeral range (``free_port``), so that no client's outgoing
        # connection takes one of the six ports before its node binds it.
        base = free_port()
        while not all(_free(base + i) for i in range(6)):
            base = free_port()
        self.ports = [base, base + 2, base + 4]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        try:
            self._start(base)
        except BaseException:
            self.stop()
            raise

    def _start(self, base: int) -> None:
        directory = self.directory
        for node_id in (1, 2, 3):
            settings = node_settings(node_id, 3, "127.0.0.1", base, directory, {
                "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                "broker.heartbeat.interval.ms": "300",
                "offsets.topic.num.partitions": "3"})
            config = directory / f"node{node_id}.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
            log = open(directory / f"node{node_id}.log", "ab")  # noqa: SIM115
            self.procs[node_id] = subprocess.Popen(
                [sys.executable, "-m", "core.cli", "broker", "--config", str(config)],
                stdout=log, stderr=subprocess.STDOUT)
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            dead = [n for n, proc in self.procs.items() if proc.poll() is not None]
            if dead:
                raise RuntimeError(f"node {dead[0]} exited during start-up; see "
                                   f"{directory / f'node{dead[0]}.log'}")
            try:
                if len(admin.list_topics(timeout=2).brokers) == 3:
                    return
            except Exception:  # starting
                pass
            time.sleep(0.2)
        raise RuntimeError("the cluster did not start in 60 s")

    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self.procs.values()]

    def kill(self, node_id: int) -> None:
        self.procs[node_id].send_signal(signal.SIGKILL)
        self.procs[node_id].wait()

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _create(bootstrap: str, topic: str, replication: int, partitions: int = 3) -> int:
    """Create ``topic`` and wait for full ISRs; returns the leader of partition 0."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = admin.list_topics(topic, timeout=5).topics.get(topic)
        if found and found.error is None and all(
                p.leader >= 0 and len(p.isrs) == replication for p in found.partitions.values()):
            return found.partitions[0].leader
        time.sleep(0.1)
    raise RuntimeError(f"{topic} has no full ISR after 30 s")


@dataclass(frozen=True)
class Run:
    """One timed produce: the rate, and the CPU the brokers and everything else used."""

    msg_s: float
    server_cpu_ms_per_mb: float  # every broker process of the side, per MB of values
    server_cores: float  # the same CPU as a share of the run's wall time (1.0 = one core)
    other_cores: float  # the rest of the machine meanwhile (other jobs: the load)


def throughput(bootstrap: str, pids: list[int], replication: int, size: int, messages: int,
               run: int) -> Run:
    topic = f"bench-{replication}-{size}-{run}"
    _create(bootstrap, topic, replication)
    cpu0, client0, busy0 = [process_cpu_s(p) for p in pids], client_cpu_s(), machine_busy_s()
    start = time.perf_counter()
    seconds = confluent_produce(bootstrap, topic, 3, [b"x" * size] * 1024, messages, "all")
    window = time.perf_counter() - start
    server = sum(process_cpu_s(p) - c for p, c in zip(pids, cpu0, strict=True))
    other = machine_busy_s() - busy0 - server - (client_cpu_s() - client0)
    return Run(messages / seconds, server * 1000 / (messages * size / 1e6), server / window,
               max(0.0, other) / window)


def compare(single: FerryBroker, cluster: Cluster, size: int, messages: int, repeats: int
            ) -> dict[str, float]:
    """Single node and cluster alternately, ``repeats`` times each, so that both see the
    same load of a shared machine; medians of the rates and of the per-pair ratios."""
    pairs = []
    for r in range(repeats):
        pairs.append((throughput(single.address, [single.pid], 1, size, messages, r),
                      throughput(cluster.bootstrap, cluster.pids, 3, size, messages, r)))
    median = statistics.median
    return {
        f"single_{size}": median(s.msg_s for s, _ in pairs),
        f"cluster_{size}": median(c.msg_s for _, c in pairs),
        f"ratio_{size}": median(c.msg_s / s.msg_s for s, c in pairs),
        f"single_cpu_ms_per_mb_{size}": median(s.server_cpu_ms_per_mb for s, _ in pairs),
        f"cluster_cpu_ms_per_mb_{size}": median(c.server_cpu_ms_per_mb for _, c in pairs),
        f"single_cores_{size}": median(s.server_cores for s, _ in pairs),
        f"cluster_cores_{size}": median(c.server_cores for _, c in pairs),
        f"other_cores_{size}": median(x.other_cores for pair in pairs for x in pair),
    }


def roles(single: FerryBroker, cluster: Cluster, messages: int, repeats: int
          ) -> dict[str, float]:
    """CPU per MB of 1 KiB values by role: a 1-partition topic, so that one cluster node
    only leads it and the two others only follow it (each batch is about 1 MB, so this is
    also CPU per batch), against the single node's; medians over ``repeats``."""
    out: dict[str, list[float]] = {"single": [], "leader": [], "follower": []}
    mb = messages * 1024 / 1e6
    for r in range(repeats):
        for side, bootstrap, pids in (("single", single.address, {0: single.pid}),
                                      ("cluster", cluster.bootstrap,
                                       dict(zip(cluster.procs, cluster.pids, strict=True)))):
            topic = f"roles-{side}-{r}"
            leader = _create(bootstrap, topic, 1 if side == "single" else 3, partitions=1)
            cpu0 = {node: process_cpu_s(pid) for node, pid in pids.items()}
            confluent_produce(bootstrap, topic, 1, [b"x" * 1024] * 1024, messages, "all")
            for node, pid in pids.items():
                ms_per_mb = (process_cpu_s(pid) - cpu0[node]) * 1000 / mb
                role = "single" if side == "single" else (
                    "leader" if node == leader else "follower")
                out[role].append(ms_per_mb)
    return {f"cpu_ms_per_mb_{role}": statistics.median(values)
            for role, values in out.items()}


def latency(bootstrap: str, samples: int) -> tuple[float, float]:
    _create(bootstrap, "bench-latency", 3)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.list_topics("bench-latency", timeout=10)
    out: list[float] = []
    for _ in range(samples):
        start = time.perf_counter()
        producer.produce("bench-latency", b"x" * 100, partition=0,
                         on_delivery=lambda err, msg, start=start: None if err else
                         out.append(time.perf_counter() - start))
        producer.flush(10)
    q = statistics.quantiles(out, n=100)
    return q[49] * 1000, q[98] * 1000


def failover(cluster: Cluster) -> tuple[float, float]:
    _create(cluster.bootstrap, "bench-failover", 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    leader = -1
    while leader < 0:
        found = admin.list_topics("bench-failover", timeout=10).topics["bench-failover"]
        leader = found.partitions[0].leader if 0 in found.partitions else -1
    acked: list[float] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "linger.ms": 1, "topic.metadata.refresh.interval.ms": 200,
                         "retry.backoff.ms": 20, "message.timeout.ms": 30000})

    def report(err: object, msg: object) -> None:
        if err is None and msg.partition() == 0:
            acked.append(time.monotonic())

    for _ in range(200):
        producer.produce("bench-failover", b"x", partition=0, on_delivery=report)
    producer.flush(10)
    killed = time.monotonic()
    cluster.kill(leader)
    all_led = None
    survivor = AdminClient({"bootstrap.servers": ",".join(
        f"127.0.0.1:{p}" for i, p in enumerate(cluster.ports, start=1) if i != leader)})
    deadline = killed + 60
    while time.monotonic() < deadline and (not acked or acked[-1] < killed or all_led is None):
        producer.produce("bench-failover", b"x", partition=0, on_delivery=report)
        producer.poll(0.005)
        if all_led is None:
            try:
                parts = survivor.list_topics("bench-failover", timeout=1).topics[
                    "bench-failover"].partitions.values()
                if all(p.leader not in (-1, leader) for p in parts):
                    all_led = time.monotonic() - killed
            except Exception:  # no answer during the election
                pass
    producer.flush(30)
    first = next((t for t in acked if t > killed), None)
    if first is None or all_led is None:
        raise RuntimeError("no failover within 60 s")
    return first - killed, all_led


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--roles", action="store_true",
                        help="also measure CPU per MB of the leader and of a follower")
    parser.add_argument("--longer", type=int, default=1, metavar="N",
                        help="produce N times as many messages per run (steadier figures: "
                             "a new topic's first batches weigh less)")
    args = parser.parse_args()
    scale, repeats = (10, 1) if args.quick else (1, args.repeats)
    sizes = {size: messages * args.longer for size, messages in SIZES.items()}
    root = Path(tempfile.mkdtemp(prefix="ferry-bench-replication-"))
    results: dict[str, float] = {"load_before": os.getloadavg()[0]}
    try:
        (root / "cluster").mkdir()
        with FerryBroker(root / "single") as single:
            cluster = Cluster(root / "cluster")
            try:
                for size, messages in sizes.items():
                    results.update(compare(single, cluster, size, messages // scale,
                                           repeats))
                if args.roles:
                    results.update(roles(single, cluster, sizes[1024] // scale, repeats))
                single.stop()
                results["latency_p50_ms"], results["latency_p99_ms"] = latency(
                    cluster.bootstrap, 2000 // scale)
                results["failover_first_ack_s"], results["failover_all_leaders_s"] = \
                    failover(cluster)
            finally:
                cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["load_after"] = os.getloadavg()[0]
    results["failover_limit_s"] = SESSION_TIMEOUT_MS / 1000 + 2
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"load average {results['load_before']:.1f} before, "
              f"{results['load_after']:.1f} after")
        for size in SIZES:
            print(f"acks=all {size:>5} B: single {results[f'single_{size}']:>9.0f} msg/s, "
                  f"RF=3 cluster {results[f'cluster_{size}']:>9.0f} msg/s, ratio "
                  f"{results[f'ratio_{size}']:.2f}"
                  + (f" (limit {LIMIT_1KIB:.2f})" if size == 1024 else ""))
            print(f"    broker CPU per MB: single {results[f'single_cpu_ms_per_mb_{size}']:.2f}"
                  f" ms, cluster {results[f'cluster_cpu_ms_per_mb_{size}']:.2f} ms (all 3 "
                  f"nodes); cores busy: single {results[f'single_cores_{size}']:.2f}, "
                  f"cluster {results[f'cluster_cores_{size}']:.2f}, other jobs "
                  f"{results[f'other_cores_{size}']:.2f}")
        if args.roles:
            print(f"CPU per MB of 1 KiB values, one partition: single node "
                  f"{results['cpu_ms_per_mb_single']:.2f} ms; RF=3 leader "
                  f"{results['cpu_ms_per_mb_leader']:.2f} ms, each follower "
                  f"{results['cpu_ms_per_mb_follower']:.2f} ms")
        print(f"RF=3 acks=all latency: p50 {results['latency_p50_ms']:.1f} ms, "
              f"p99 {results['latency_p99_ms']:.1f} ms")
        print(f"failover: first acknowledged write on the new leader "
              f"{results['failover_first_ack_s']:.2f} s, every partition led "
              f"{results['failover_all_leaders_s']:.2f} s (limit "
              f"{results['failover_limit_s']:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
