"""Fixtures of the broker's handler tests: an in-process broker and a client connected to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import InProcessBroker, WireClient


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    """A broker with auto-creation off and a topic ``t`` of 2 partitions."""
    b = InProcessBroker(tmp_path, {"auto.create.topics.enable": "false"})
    b.manager.create_topic("t", 2)
    yield b
    b.close()


@pytest.fixture
def client(broker: InProcessBroker) -> Iterator[WireClient]:
    c = broker.client()
    yield c
    c.close()
