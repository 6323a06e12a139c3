"""The logs the ``test_dist_*_store`` tests run backing stores on (imported by name:
pytest puts this directory on ``sys.path``; not a test file).

``log_fixtures(harness, name)`` makes a test module's two fixtures: ``kafka_broker``, a
Ferry broker subprocess shared by the module, and ``log``, run once on the embedded
backend and once (marked integration) with kafka:// on that broker, giving a
``LogHarness`` on a fresh topic that closes everything it opened. Each module subclasses
``LogHarness`` with the ``store()`` its tests need.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest
from broker_process import BrokerProcess

from core.backends import LogBackend, OffsetSpec, ProducerRecord, TopicPartition, open_backend

__all__ = [
    "BROKER_CONFIG",
    "WAIT_S",
    "LogHarness",
    "log_fixtures",
    "partition_records",
    "produce_raw",
]

WAIT_S = 15.0
BROKER_CONFIG = {"num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
                 "offsets.topic.num.partitions": "4"}
CLIENT_CONFIG = {"request.timeout.ms": "15000", "default.api.timeout.ms": "20000",
                 "delivery.timeout.ms": "20000"}


class LogHarness:
    """Opens backends and stores on one log; closes everything it opened."""

    #: The topic is this prefix and a random suffix.
    TOPIC_PREFIX: ClassVar[str]

    def __init__(self, url: str, config: dict[str, str]) -> None:
        self.url = url
        self.config = config
        self.topic = f"{self.TOPIC_PREFIX}-{uuid.uuid4().hex[:8]}"
        self._backends: list[LogBackend] = []
        self._stops: list[Callable[[], object]] = []

    def backend(self) -> LogBackend:
        backend = open_backend(self.url, self.config)
        self._backends.append(backend)
        return backend

    def on_close(self, stop: Callable[[], object]) -> None:
        """Have ``close()`` call ``stop`` (a store's), before it closes the backends."""
        self._stops.append(stop)

    def close(self) -> None:
        for stop in self._stops:
            stop()
        for backend in self._backends:
            backend.close()


H = TypeVar("H", bound=LogHarness)


def log_fixtures(harness: Callable[[str, dict[str, str]], H], name: str) -> tuple[Any, Any]:
    """The fixtures ``kafka_broker`` and ``log`` (a ``harness``) of a test module; ``name``
    names the broker's directory and the kafka:// client. Use as
    ``kafka_broker, log = log_fixtures(MyHarness, "dist-my")``."""

    @pytest.fixture(scope="module")
    def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
        directory = tmp_path_factory.mktemp(f"{name}-broker")
        broker = BrokerProcess(directory / "data", dict(BROKER_CONFIG), directory / "broker.log")
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()

    @pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.integration)])
    def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[H]:
        if request.param == "embedded":
            opened = harness(f"embedded:{tmp_path / 'data'}", {"num.partitions": "1"})
        else:
            broker = request.getfixturevalue("kafka_broker")
            opened = harness(f"kafka://{broker.bootstrap}",
                             {"client.id": f"{name}-test", **CLIENT_CONFIG})
        try:
            yield opened
        finally:
            opened.close()

    return kafka_broker, log


def partition_records(backend: LogBackend, tp: TopicPartition) -> list[tuple[str, bytes | None]]:
    """Every record of ``tp`` as (key, value), in offset order."""
    position = backend.list_offsets([tp], OffsetSpec.EARLIEST)[tp]
    end = backend.list_offsets([tp], OffsetSpec.LATEST)[tp]
    out: list[tuple[str, bytes | None]] = []
    for _ in range(10_000):
        if position >= end:
            return out
        result = backend.fetch({tp: position})[tp]
        out.extend(((r.key or b"").decode(), r.value) for r in result.records)
        position = result.next_offset
    raise AssertionError(f"reading {tp} did not finish")


def produce_raw(backend: LogBackend, topic: str, records: list[tuple[str, str | None]], *,
                one_call_each: bool = False) -> None:
    """Produce (key, value) text records as they are, in one call, or with
    ``one_call_each`` one call a record (which keeps their order across partitions
    obvious)."""
    encoded = [ProducerRecord(key=k.encode(), value=None if v is None else v.encode())
               for k, v in records]
    for batch in ([r] for r in encoded) if one_call_each else [encoded]:
        backend.produce(topic, batch)
