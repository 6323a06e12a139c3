"""Backends the LogBackend contract suite runs against.

Each entry opens a fresh, empty backend; the same tests then run on every backend.
``embedded`` is the in-process log; ``kafka`` is a ``kafka://`` client of a real
``ferry broker`` subprocess started for the test. ``reopen`` closes a backend and opens the
same log again, to check what must survive a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess

from core.backends import LogBackend, open_backend

#: Broker settings for contract runs: the embedded harness's defaults, no initial rebalance
#: delay (Kafka's 3 s would only slow every first join down) and a small
#: __consumer_offsets (50 partitions make every broker start slower).
BROKER_CONFIG = {"num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
                 "offsets.topic.num.partitions": "4"}


class BackendHarness:
    """Opens backends on one log and closes whatever it opened."""

    def __init__(self, url: str, config: dict[str, str],
                 on_close: Callable[[], None] | None = None) -> None:
        self.url = url
        self.config = config
        self.opened: list[LogBackend] = []
        self._on_close = on_close

    def open(self) -> LogBackend:
        backend = open_backend(self.url, self.config)
        self.opened.append(backend)
        return backend

    def reopen(self, backend: LogBackend) -> LogBackend:
        backend.close()
        return self.open()

    def close_all(self) -> None:
        try:
            for backend in self.opened:
                backend.close()
        finally:
            if self._on_close is not None:
                self._on_close()


def _embedded(tmp_path: Path) -> BackendHarness:
    return BackendHarness(f"embedded:{tmp_path / 'data'}", {"num.partitions": "1"})


def _kafka(tmp_path: Path) -> BackendHarness:
    broker = BrokerProcess(tmp_path / "broker-data", dict(BROKER_CONFIG),
                           tmp_path / "broker.log")
    broker.start()
    # Short client timeouts: a broken broker fails the test in seconds, not minutes.
    config = {"client.id": "ferry-contract", "request.timeout.ms": "15000",
              "default.api.timeout.ms": "20000", "delivery.timeout.ms": "20000"}
    return BackendHarness(f"kafka://{broker.bootstrap}", config, on_close=broker.stop)


HARNESSES: dict[str, Callable[[Path], BackendHarness]] = {"embedded": _embedded,
                                                          "kafka": _kafka}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendHarness]:
    h = HARNESSES[request.param](tmp_path)
    try:
        yield h
    finally:
        h.close_all()


@pytest.fixture
def backend(harness: BackendHarness) -> LogBackend:
    return harness.open()
