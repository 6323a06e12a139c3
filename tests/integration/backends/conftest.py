"""Fixtures for the kafka backend's live tests: a real ``ferry broker`` and a backend on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess

from core.backends.kafka import KafkaBackend

#: Client timeouts for live tests: a broken broker fails a test in seconds, not minutes.
CLIENT_CONFIG = {"client.id": "ferry-live-test", "request.timeout.ms": "10000",
                 "default.api.timeout.ms": "15000", "delivery.timeout.ms": "15000"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "broker-data",
                      {"group.initial.rebalance.delay.ms": "0", "num.partitions": "1",
                       "offsets.topic.num.partitions": "4"},
                      tmp_path / "broker.log")
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def client_config() -> dict[str, str]:
    return dict(CLIENT_CONFIG)


@pytest.fixture
def backend(broker: BrokerProcess, client_config: dict[str, str]) -> Iterator[KafkaBackend]:
    b = KafkaBackend.from_url(f"kafka://{broker.bootstrap}", client_config)
    try:
        yield b
    finally:
        b.close()
