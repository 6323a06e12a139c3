"""Failover and rebalance times of a Connect cluster (``ferry connect distributed``).

Run from the repository root (a script, not a test):

    python3 bench/connect_failover.py [--repeats 3] [--delays 0,5000]
                                      [--session-timeout-ms 10000] [--heartbeat-ms 3000]
                                      [--dir DIR]

Everything runs as subprocesses on 127.0.0.1: one ``ferry broker`` and
``ferry connect distributed`` workers on ``kafka://`` to it (what a deployment runs).
Connectors are ``datagen`` sources at a low rate (the figures are the control plane's,
not throughput's). Times are taken by polling every 20 ms from this process.

1. **Failover.** Three workers run 2 connectors x 3 tasks. A follower (not the group
   leader) is SIGKILLed: no LeaveGroup, no commit. Measured from the kill:
   *detection*, until the group coordinator has expired the dead member (DescribeGroup
   shows two members: the session timeout); and *recovered*, until every connector and
   task that ran on the dead worker is RUNNING on a survivor (status API). Run once per
   ``scheduled.rebalance.max.delay.ms`` in ``--delays``; between runs the killed worker
   is started again and the cluster rebalanced.
2. **Join.** Two workers run 3 connectors x 10 tasks (30 tasks). A third worker is
   started; measured from its process start (including Python start-up) and from its
   first healthy ``GET /health`` (it joined the group) until all 30 tasks are RUNNING and
   the new worker runs some of them. It is then stopped (SIGTERM) and the cluster
   settles before the next run (``scheduled.rebalance.max.delay.ms=0`` here, so its work
   moves back at once).

Medians over ``--repeats`` runs, with each run's figures. Session timeout and heartbeat
default to Kafka's (10 s, 3 s).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _servers import FerryBroker, ServerProcess  # noqa: E402

from core.backends import open_backend  # noqa: E402

log = logging.getLogger("connect_failover")

POLL_S = 0.02
WAIT_S = 120.0
GROUP = "bench-connect"


class ConnectWorker(ServerProcess):
    """``ferry connect distributed`` on a fixed REST port (a restart keeps its id)."""

    name = "connect worker"

    def __init__(self, data_dir: Path, log_url: str, config_path: Path) -> None:
        super().__init__(data_dir)
        self.log_url = log_url
        self.config_path = config_path
        self.base = f"http://{self.address}"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "core.cli", "connect", "distributed", "--log",
                self.log_url, "--group-id", GROUP, "--rest", self.address,
                "--config", str(self.config_path)]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def healthy(self) -> bool:
        try:
            return requests.get(self.base + "/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False


def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = cond()
        except requests.RequestException:
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL_S)


def rest(worker: ConnectWorker, method: str, path: str, body: Any = None) -> Any:
    """A REST call, retried while it answers 409 (rebalance) or cannot connect."""
    def attempt() -> Any:
        response = requests.request(method, worker.base + path, json=body, timeout=30)
        if response.status_code == 409:
            return None
        response.raise_for_status()
        return response.json() if response.content else True
    return wait_for(attempt, f"{method} {path}")


def datagen(topic: str, tasks: int) -> dict[str, str]:
    return {"connector.class": "datagen", "kafka.topic": topic, "quickstart": "users",
            "tasks.max": str(tasks), "rate": str(2 * tasks),
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1"}


def statuses(worker: ConnectWorker, names: list[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in names:
        response = requests.get(f"{worker.base}/connectors/{name}/status", timeout=10)
        if response.status_code != 200:
            return {}
        out[name] = response.json()
    return out


def placements(found: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """``{"c" or "c-N": (state, worker_id)}`` over every connector and task."""
    out = {}
    for name, status in found.items():
        out[name] = (status["connector"]["state"], status["connector"]["worker_id"])
        for task in status["tasks"]:
            out[f"{name}-{task['id']}"] = (task["state"], task["worker_id"])
    return out


def all_running(worker: ConnectWorker, names: list[str], tasks: int
                ) -> dict[str, tuple[str, str]] | None:
    found = statuses(worker, names)
    if len(found) != len(names) or sum(len(s["tasks"]) for s in found.values()) != tasks:
        return None
    places = placements(found)
    return places if all(state == "RUNNING" for state, _ in places.values()) else None


def members(backend: Any) -> int:
    return len(backend.describe_group(GROUP).members)


class Cluster:
    def __init__(self, root: Path, props: dict[str, str]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.broker = FerryBroker(root / "broker", {"group.initial.rebalance.delay.ms": "0",
                                                    "offsets.topic.num.partitions": "4"})
        self.config_path = root / "worker.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.workers: list[ConnectWorker] = []
        self.backend: Any = None

    def start(self, n: int) -> None:
        self.broker.start()
        self.backend = open_backend(f"kafka://{self.broker.address}")
        for _ in range(n):
            self.add()

    def add(self) -> ConnectWorker:
        worker = ConnectWorker(self.root / f"worker{len(self.workers)}",
                               f"kafka://{self.broker.address}", self.config_path)
        worker.start()
        wait_for(worker.healthy, "a worker to be healthy")
        self.workers.append(worker)
        return worker

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        if self.backend is not None:
            self.backend.close()
        self.broker.stop()


def leader_of(cluster: Cluster) -> ConnectWorker | None:
    """The worker whose log says it led the newest generation (DescribeGroup does not
    name the leader)."""
    best: tuple[int, ConnectWorker | None] = (-1, None)
    for w in cluster.workers:
        if w.proc is None or w.proc.poll() is not None:
            continue
        found = re.findall(r"completed generation (\d+) of group \S+ as (leader|follower)",
                           w.output(tail=200_000))
        if found and int(found[-1][0]) > best[0]:
            best = (int(found[-1][0]), w if found[-1][1] == "leader" else None)
    return best[1]


def run_failover(root: Path, delay_ms: int, repeats: int, session_ms: int, heartbeat_ms: int
                 ) -> list[tuple[float, float]]:
    props = {"session.timeout.ms": str(session_ms), "heartbeat.interval.ms": str(heartbeat_ms),
             "scheduled.rebalance.max.delay.ms": str(delay_ms),
             "offset.storage.partitions": "3", "status.storage.partitions": "2",
             "offset.flush.interval.ms": "1000"}
    cluster = Cluster(root / f"failover-{delay_ms}", props)
    names = ["fa", "fb"]
    results = []
    try:
        cluster.start(3)
        for name in names:
            rest(cluster.workers[0], "POST", "/connectors", {"name": name,
                                                             "config": datagen(name, 3)})
        for run in range(repeats):
            detected, recovered, lost = failover_once(cluster, names)
            results.append((detected, recovered))
            log.info("delay %d ms, run %d: detected after %.2f s, %d items RUNNING again "
                     "after %.2f s", delay_ms, run + 1, detected, lost, recovered)
    finally:
        cluster.close()
    return results


def failover_once(cluster: Cluster, names: list[str]) -> tuple[float, float, int]:
    """Kill a follower; ``(detected, recovered, items moved)``, times from the kill. The
    killed worker is started again before returning."""
    first = cluster.workers[0]
    places = wait_for(lambda: (p := all_running(first, names, 6)) and len(
        {w for _, w in p.values()}) == 3 and p, "6 tasks RUNNING on 3 workers")
    victim = pick_follower(cluster, places)
    survivor = next(w for w in cluster.workers if w is not victim)
    lost = [k for k, (_, w) in places.items() if w == victim.address]
    killed = time.monotonic()
    victim.kill()
    detected = wait_for(lambda: members(cluster.backend) == 2 and time.monotonic(),
                        "the coordinator to expire the killed worker")
    recovered = wait_for(lambda: (p := all_running(survivor, names, 6)) and all(
        p[k][1] != victim.address for k in lost) and time.monotonic(),
        "the lost work RUNNING on the survivors")
    victim.start()
    wait_for(victim.healthy, "the killed worker to come back")
    return detected - killed, recovered - killed, len(lost)


def pick_follower(cluster: Cluster, places: dict[str, tuple[str, str]]) -> ConnectWorker:
    leader = leader_of(cluster)
    followers = [w for w in cluster.workers if w is not leader and w.proc is not None
                 and w.proc.poll() is None]
    return max(followers, key=lambda w: sum(1 for _, o in places.values() if o == w.address))


def run_join(root: Path, repeats: int, session_ms: int, heartbeat_ms: int
             ) -> list[tuple[float, float]]:
    props = {"session.timeout.ms": str(session_ms), "heartbeat.interval.ms": str(heartbeat_ms),
             "scheduled.rebalance.max.delay.ms": "0", "offset.storage.partitions": "3",
             "status.storage.partitions": "2", "offset.flush.interval.ms": "5000"}
    cluster = Cluster(root / "join", props)
    names = ["ja", "jb", "jc"]
    results = []
    try:
        cluster.start(2)
        first = cluster.workers[0]
        for name in names:
            rest(first, "POST", "/connectors", {"name": name, "config": datagen(name, 10)})
        for run in range(repeats):
            since_start, since_join = join_once(cluster, first, names, run)
            results.append((since_start, since_join))
            log.info("join run %d: all 30 tasks RUNNING, some on the new worker, %.2f s after "
                     "its start (%.2f s after it joined)", run + 1, since_start, since_join)
    finally:
        cluster.close()
    return results


def join_once(cluster: Cluster, first: ConnectWorker, names: list[str], run: int
              ) -> tuple[float, float]:
    """Start a third worker; ``(since its start, since it joined)`` until balanced. The
    worker is stopped again before returning."""
    wait_for(lambda: (p := all_running(first, names, 30)) and len(
        {w for _, w in p.values()}) == 2 and p, "30 tasks RUNNING on 2 workers")
    joiner = ConnectWorker(cluster.root / f"joiner{run}", f"kafka://{cluster.broker.address}",
                           cluster.config_path)
    began = time.monotonic()
    joiner.start()  # returns once its REST port accepts connections
    joined = wait_for(lambda: joiner.healthy() and time.monotonic(), "the new worker to join")

    def balanced() -> float | None:
        p = all_running(first, names, 30)
        if not p:
            return None
        tasks = [w for k, (_, w) in p.items() if k.rsplit("-", 1)[-1].isdigit()]
        return time.monotonic() if joiner.address in tasks else None

    done = wait_for(balanced, "30 tasks RUNNING with some on the new worker")
    joiner.stop()
    return done - began, done - joined


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delays", default="0,5000",
                        help="scheduled.rebalance.max.delay.ms values for the failover runs")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--heartbeat-ms", type=int, default=3000)
    parser.add_argument("--dir", help="where the broker and workers keep data and logs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    delays = [int(d) for d in args.delays.split(",") if d.strip()]
    command = shlex.join(["python3", *sys.argv])
    with tempfile.TemporaryDirectory(prefix="connect-failover-", dir=args.dir) as tmp:
        root = Path(tmp)
        failovers = {d: run_failover(root, d, args.repeats, args.session_timeout_ms,
                                     args.heartbeat_ms) for d in delays}
        joins = run_join(root, args.repeats, args.session_timeout_ms, args.heartbeat_ms)
    print(f"\ncommand: {command}")
    print(f"session.timeout.ms={args.session_timeout_ms} "
          f"heartbeat.interval.ms={args.heartbeat_ms}, {args.repeats} runs each, medians "
          "(each run in brackets)")
    print("\nfailover: 3 workers, 2 connectors x 3 tasks, a follower SIGKILLed")
    print(f"{'scheduled.rebalance.max.delay.ms':>34} {'detected (s)':>14} {'RUNNING again (s)':>19}"
          f" {'after detection (s)':>21}")
    for delay, runs in failovers.items():
        detected = [d for d, _ in runs]
        recovered = [r for _, r in runs]
        after = [r - d for d, r in runs]
        print(f"{delay:>34} {median(detected):>14.2f} {median(recovered):>19.2f} "
              f"{median(after):>21.2f}   [{', '.join(f'{r:.2f}' for r in recovered)}]")
    print("\njoin: 2 workers running 3 connectors x 10 tasks, a third worker started")
    since_start = [s for s, _ in joins]
    since_join = [j for _, j in joins]
    print(f"all 30 tasks RUNNING, some on the new worker: {median(since_start):.2f} s after "
          f"its process started [{', '.join(f'{x:.2f}' for x in since_start)}], "
          f"{median(since_join):.2f} s after it joined "
          f"[{', '.join(f'{x:.2f}' for x in since_join)}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
