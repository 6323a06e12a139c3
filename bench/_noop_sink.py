"""A sink connector that only counts what it is given, the zero-cost sink the Connect
benchmarks measure the runtime against, and the bounded wait they poll it with.

Register it in an in-process worker as ``_noop_sink:NoOpSink`` (``bench/`` is on
``sys.path`` when a benchmark script runs). ``FIRST`` holds, per connector name, when its
task was first given records; ``COUNTS`` how many it has been given.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

from connect.api import ConfigDef, SinkConnector, SinkRecord, SinkTask

__all__ = ["CLASS", "COUNTS", "FIRST", "LOCK", "NoOpSink", "NoOpSinkTask", "wait_until"]

CLASS = f"{__name__}:NoOpSink"
COUNTS: dict[str, int] = {}
FIRST: dict[str, float] = {}
LOCK = threading.Lock()


class NoOpSinkTask(SinkTask):
    """Counts the records it is given, and nothing else."""

    def version(self) -> str:
        return "bench"

    def start(self, props: Mapping[str, str]) -> None:
        self._name = props["name"]

    def put(self, records: Sequence[SinkRecord]) -> None:
        if records:
            with LOCK:
                FIRST.setdefault(self._name, time.perf_counter())
                COUNTS[self._name] = COUNTS.get(self._name, 0) + len(records)

    def stop(self) -> None:
        pass


class NoOpSink(SinkConnector):
    def version(self) -> str:
        return "bench"

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type:
        return NoOpSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str,
               poll_s: float = 0.002) -> None:
    """Poll ``predicate`` every ``poll_s``; exit the benchmark after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(poll_s)
