"""Distributed workers in this process on one ``embedded:`` log, and a test connector,
for the ``test_dist_herder_*`` tests (imported by name: pytest puts this directory on
``sys.path``; not a test file).

Each worker is a real ``DistributedWorker`` (herder, worker, REST server on a free
127.0.0.1 port); tests talk to it over HTTP. ``TickSource`` (``connector.class`` =
``dist_herder_harness:TickSource``) is a source whose tasks record what they were started
with and fail on demand (``FAILING``), so tests can see restarts and FAILED states.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import requests
from broker_process import free_port

from connect.api import ConfigDef, SourceConnector, SourceRecord, SourceTask
from connect.cli import DistributedWorker

__all__ = ["FAILING", "SOURCE", "STARTS", "TASK_PROPS", "LocalCluster", "TickSource", "call",
           "fail", "running", "source", "starts", "status", "task_props", "wait_for"]

SOURCE = "dist_herder_harness:TickSource"
WAIT_S = 30.0

#: Task (connector, id) → how many times it started, and the props of its last start.
STARTS: dict[tuple[str, int], int] = defaultdict(int)
TASK_PROPS: dict[tuple[str, int], dict[str, str]] = {}
#: Tasks that raise from poll while listed here.
FAILING: set[tuple[str, int]] = set()
_LOCK = threading.Lock()


def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT_S,
             detail: Callable[[], Any] = lambda: "") -> Any:
    """Poll ``cond`` until it returns something truthy (returned); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = cond()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                 f"{detail()}")
        time.sleep(0.05)


def call(base: str, method: str, path: str, body: Any = None,
         headers: Mapping[str, str] | None = None, data: bytes | None = None
         ) -> tuple[int, Any]:
    """One REST call; ``(status, parsed JSON or None)``."""
    response = requests.request(method, base + path, json=body, data=data,
                                headers=dict(headers or {}), timeout=30)
    try:
        parsed = response.json() if response.content else None
    except ValueError:
        parsed = response.text
    return response.status_code, parsed


class TickSourceTask(SourceTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._name = props["name"]
        self._id = int(props["task.index"])
        self._topic = props["topic"]
        self._stopping = threading.Event()
        self._n = 0
        with _LOCK:
            STARTS[(self._name, self._id)] += 1
            TASK_PROPS[(self._name, self._id)] = dict(props)

    def poll(self) -> Sequence[SourceRecord] | None:
        if (self._name, self._id) in FAILING:
            raise RuntimeError(f"task {self._id} of {self._name} was told to fail")
        if self._stopping.wait(0.05):
            return None
        self._n += 1
        return [SourceRecord(topic=self._topic, value=f"{self._id}-{self._n}",
                             source_partition={"task": self._id},
                             source_offset={"n": self._n})]

    def stop(self) -> None:
        self._stopping.set()


class TickSource(SourceConnector):
    """Tasks ``0..tasks.max-1``, each with the connector's props plus ``task.index``."""

    def version(self) -> str:
        return "1"

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type:
        return TickSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, "task.index": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        pass


def source(topic: str = "ticks", tasks: int = 2, **extra: str) -> dict[str, str]:
    """A TickSource config; failed tasks stay FAILED (no automatic restart)."""
    return {"connector.class": SOURCE, "topic": topic, "tasks.max": str(tasks),
            "errors.task.restart.enable": "false",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1", **extra}


class LocalCluster:
    """Workers of one group on ``embedded:<tmp>/log``; ``close()`` stops them all."""

    BASE_PROPS = {
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
        "scheduled.rebalance.max.delay.ms": "1000",
        "offset.flush.interval.ms": "200",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "task.shutdown.graceful.timeout.ms": "2000",
        "key.converter": "StringConverter",
        "value.converter": "StringConverter",
    }

    def __init__(self, tmp: Path, group: str = "dist-herder", **props: str) -> None:
        self.log_url = f"embedded:{tmp / 'log'}"
        self.group = group
        self.props = {**self.BASE_PROPS, **props}
        self.workers: list[DistributedWorker] = []
        with _LOCK:
            STARTS.clear()
            TASK_PROPS.clear()
            FAILING.clear()

    def add(self, **props: str) -> DistributedWorker:
        worker = DistributedWorker(self.log_url, {**self.props, **props}, group_id=self.group,
                                   rest_listener=f"127.0.0.1:{free_port()}")
        worker.start()
        self.workers.append(worker)
        wait_for(lambda: call(worker.url, "GET", "/health")[0] == 200,
                 f"worker {worker.worker_id} to be healthy")
        return worker

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()

    def leader(self) -> DistributedWorker:
        def find() -> DistributedWorker | None:
            found = [w for w in self.workers if w.herder is not None
                     and w.herder.member.is_leader and not w.herder.member.rebalancing]
            return found[0] if len(found) == 1 else None
        result: DistributedWorker = wait_for(find, "one leader")
        return result

    def settled(self) -> bool:
        """Every worker completed the same generation and none is rebalancing."""
        members = [w.herder.member for w in self.workers if w.herder is not None]
        return (len({m.generation_id for m in members}) == 1
                and not any(m.rebalancing for m in members))


def status(base: str, name: str) -> dict[str, Any] | None:
    code, body = call(base, "GET", f"/connectors/{name}/status")
    return body if code == 200 else None


def running(base: str, name: str, tasks: int) -> dict[str, Any] | None:
    """The status when the connector and exactly ``tasks`` tasks are RUNNING."""
    found = status(base, name)
    if found is None or len(found["tasks"]) != tasks:
        return None
    states = [found["connector"]["state"], *(t["state"] for t in found["tasks"])]
    return found if set(states) == {"RUNNING"} else None


def starts(name: str, task: int) -> int:
    with _LOCK:
        return STARTS[(name, task)]


def fail(name: str, task: int, failing: bool = True) -> None:
    with _LOCK:
        (FAILING.add if failing else FAILING.discard)((name, task))


def task_props(name: str, task: int) -> dict[str, str]:
    with _LOCK:
        return dict(TASK_PROPS.get((name, task), {}))
