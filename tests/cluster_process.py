"""Cluster nodes as real subprocesses on free 127.0.0.1 ports: each runs the metadata
service (``python -m core.cli.cluster_node``), or with ``broker=True`` a whole cluster
broker (``ferry broker --config``, Kafka listener on ``kafka_port``), from a KRaft-style
properties file. ``kill()`` is SIGKILL, ``pause()``/``resume()`` SIGSTOP/SIGCONT;
``describe()`` asks the node for its committed metadata over the controller listener."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polling
from broker_process import free_port

from core.cluster.service import request

__all__ = ["ClusterNodeProcess", "start_cluster"]


class ClusterNodeProcess:
    def __init__(self, node_id: int, directory: Path, voters: str, controller_port: int,
                 extra: dict[str, str], *, broker_only: bool = False,
                 broker: bool = False, metrics: bool = False) -> None:
        self.node_id = node_id
        self.broker = broker
        self.kafka_port = free_port()
        #: ``ferry broker --metrics`` on this port (brokers only), else None
        self.metrics_port = free_port() if metrics and broker else None
        self.controller_port = controller_port
        self.data_dir = directory / f"node{node_id}"
        self.log_path = directory / f"node{node_id}.log"
        self.config_path = directory / f"node{node_id}.properties"
        settings = {
            "process.roles": "broker,controller", "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.kafka_port},"
                         f"CONTROLLER://127.0.0.1:{controller_port}",
            "controller.listener.names": "CONTROLLER", "log.dirs": str(self.data_dir),
            "controller.quorum.election.timeout.ms": "500",
            "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
            **extra}
        if broker_only:  # an observer: no controller listener, the voters as bootstrap
            del settings["controller.quorum.voters"]
            settings.update({
                "process.roles": "broker",
                "controller.quorum.bootstrap.servers": ",".join(
                    v.split("@")[1] for v in voters.split(",")),
                "listeners": f"PLAINTEXT://127.0.0.1:{self.kafka_port}"})
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            command = (["-m", "core.cli", "broker"] if self.broker
                       else ["-m", "core.cli.cluster_node"])
            if self.metrics_port is not None:
                command += ["--metrics", f"127.0.0.1:{self.metrics_port}"]
            self.proc = subprocess.Popen(
                [sys.executable, *command, "--config", str(self.config_path)],
                stdout=log, stderr=subprocess.STDOUT)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe(self) -> dict[str, Any] | None:
        """The node's committed metadata, or None if it does not answer."""
        try:
            reply = asyncio.run(request("127.0.0.1", self.controller_port, "describe", {},
                                        timeout_s=2.0))
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            return None
        return reply.get("result")

    def kill(self) -> None:
        if self.alive:
            os.kill(self.proc.pid, signal.SIGCONT)  # a paused process too
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def start_cluster(directory: Path, size: int = 3, broker_only: int = 0, *,
                  broker: bool = False, metrics: bool = False, **extra: str
                  ) -> list[ClusterNodeProcess]:
    """``size`` combined nodes (ids 1..size), then ``broker_only`` observers; with
    ``broker`` each runs ``ferry broker`` (Kafka listener and replicas too), with
    ``metrics`` also serving ``/metrics`` and ``/health`` on ``metrics_port``."""
    ports = [free_port() for _ in range(size)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(ports))
    nodes = [ClusterNodeProcess(i + 1, directory, voters, ports[i], dict(extra),
                                broker=broker, metrics=metrics) for i in range(size)]
    nodes += [ClusterNodeProcess(size + 1 + i, directory, voters, 0, dict(extra),
                                 broker_only=True, broker=broker, metrics=metrics)
              for i in range(broker_only)]
    for node in nodes:
        node.start()
    return nodes


@contextlib.contextmanager
def running_cluster(directory: Path, size: int = 3, broker_only: int = 0, *,
                    broker: bool = False, **extra: str) -> Iterator[list[ClusterNodeProcess]]:
    """``start_cluster``'s nodes, every one SIGKILLed when the block ends."""
    nodes = start_cluster(directory, size, broker_only, broker=broker, **extra)
    try:
        yield nodes
    finally:
        for node in nodes:
            node.kill()


def all_unfenced(nodes: list[ClusterNodeProcess]) -> bool:
    """Whether every node's view of the cluster has every node as an unfenced broker (each
    node applies the metadata log at its own pace)."""
    for node in nodes:
        view = node.describe()
        if not view or sum(not b["fenced"] for b in view["brokers"].values()) != len(nodes):
            return False
    return True


def wait_for(condition, timeout_s: float, what: str, nodes=()) -> Any:
    """``polling.wait_for`` for cluster tests: fails with the nodes' logs."""
    return polling.wait_for(
        condition, what, timeout_s, poll=0.1,
        detail=lambda: "\n".join(f"--- node {n.node_id}\n{n.output()}" for n in nodes))
