"""``ferry up --brokers N``: a local cluster of N combined broker+controller nodes for trying
replication out. Each node is a ``ferry broker --config`` subprocess with its own
KRaft-style properties file and data directory under ``DATA_DIR/nodeI``; Kafka listeners
on ``PORT, PORT+2, ...`` and controller listeners on ``PORT+1, PORT+3, ...``. Ctrl-C (or
SIGTERM) stops every node; a node that dies is reported and the others keep running.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

from core.cli.errors import CliError

__all__ = ["node_settings", "run_local_cluster"]

log = logging.getLogger("ferry.up")

_STOP_TIMEOUT_S = 20.0


def node_settings(node_id: int, brokers: int, host: str, base_port: int, data_dir: Path,
                  extra: dict[str, str]) -> dict[str, str]:
    """The settings of node ``node_id`` (1-based) of a local ``brokers``-node cluster."""
    voters = ",".join(f"{i}@{host}:{base_port + 2 * (i - 1) + 1}"
                      for i in range(1, brokers + 1))
    kafka, controller = base_port + 2 * (node_id - 1), base_port + 2 * (node_id - 1) + 1
    replication = str(min(3, brokers))
    return {
        "process.roles": "broker,controller", "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{host}:{kafka},CONTROLLER://{host}:{controller}",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(data_dir / f"node{node_id}"),
        "default.replication.factor": replication,
        "offsets.topic.replication.factor": replication,
        "min.insync.replicas": str(min(2, brokers)),
        "auto.create.topics.enable": "true",
        **extra,
    }


def run_local_cluster(brokers: int, host: str, base_port: int, data_dir: Path,
                      extra: dict[str, str]) -> int:
    """Start the nodes, wait for Ctrl-C/SIGTERM, stop them. Returns the exit code."""
    if brokers < 1:
        raise CliError(f"--brokers must be at least 1, not {brokers}")
    if base_port + 2 * brokers > 65535:
        raise CliError(f"ports {base_port}..{base_port + 2 * brokers - 1} do not all exist; "
                       "give a lower --listen port")
    data_dir.mkdir(parents=True, exist_ok=True)
    nodes: list[subprocess.Popen[bytes]] = []
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for node_id in range(1, brokers + 1):
            settings = node_settings(node_id, brokers, host, base_port, data_dir, extra)
            config = data_dir / f"node{node_id}.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
            nodes.append(subprocess.Popen([sys.executable, "-m", "core.cli", "broker",
                                           "--config", str(config)]))
        bootstrap = ",".join(f"{host}:{base_port + 2 * i}" for i in range(brokers))
        sys.stderr.write(f"ferry: a {brokers}-broker cluster is starting; bootstrap servers "
                         f"{bootstrap}; data in {data_dir}; Ctrl-C stops it\n")
        reported: set[int] = set()
        while not stopping and any(node.poll() is None for node in nodes):
            for node_id, node in enumerate(nodes, start=1):
                if node.poll() is not None and node_id not in reported:
                    reported.add(node_id)
                    sys.stderr.write(f"ferry: node {node_id} exited with code "
                                     f"{node.returncode}\n")
            time.sleep(0.2)
    finally:
        for node in nodes:
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        for node in nodes:
            try:
                node.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0 if stopping else 1
