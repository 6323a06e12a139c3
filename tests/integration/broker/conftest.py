"""A real ``ferry broker`` subprocess on a free 127.0.0.1 port, for client tests.

``broker`` starts one per test (``broker_factory`` for custom configs); each is stopped by
the fixture that started it. ``module_broker`` is one broker shared by a test module, for
suites of independent tests that each use their own topics. ``restart()`` stops a broker
gently and starts it again on the same port and data directory; ``kill()`` sends SIGKILL.
``BrokerProcess`` lives in ``tests/broker_process.py``, shared with the LogBackend contract
suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from broker_process import BrokerProcess

__all__ = ["BrokerProcess", "broker", "broker_factory", "module_broker"]


def _factory(directory: Path) -> Iterator[Callable[..., BrokerProcess]]:
    started: list[BrokerProcess] = []

    def make(config: Mapping[str, str] | None = None, name: str = "broker") -> BrokerProcess:
        b = BrokerProcess(directory / f"{name}-data", dict(config or {}),
                          directory / f"{name}.log")
        started.append(b)
        b.start()
        return b

    try:
        yield make
    finally:
        for b in started:
            b.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    yield from _factory(tmp_path)


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a whole test module, stopped after its last test."""
    for make in _factory(tmp_path_factory.mktemp("module-broker")):
        yield make({"group.initial.rebalance.delay.ms": "0",
                    "offsets.topic.num.partitions": "4"})


@pytest.fixture
def broker(broker_factory: Callable[..., BrokerProcess]) -> BrokerProcess:
    return broker_factory({"group.initial.rebalance.delay.ms": "0"})
