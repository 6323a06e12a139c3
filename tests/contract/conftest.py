"""Backends the LogBackend contract suite runs against.

Each entry opens a fresh, empty backend; the same tests then run on every backend (the
``kafka`` entry joins when the broker issue lands). ``reopen`` closes a backend and opens
the same log again, to check what must survive a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.backends import LogBackend, open_backend


class BackendHarness:
    """Opens backends on one log and closes whatever it opened."""

    def __init__(self, url: str, config: dict[str, str]) -> None:
        self.url = url
        self.config = config
        self.opened: list[LogBackend] = []

    def open(self) -> LogBackend:
        backend = open_backend(self.url, self.config)
        self.opened.append(backend)
        return backend

    def reopen(self, backend: LogBackend) -> LogBackend:
        backend.close()
        return self.open()

    def close_all(self) -> None:
        for backend in self.opened:
            backend.close()


def _embedded(tmp_path: Path) -> BackendHarness:
    return BackendHarness(f"embedded:{tmp_path / 'data'}", {"num.partitions": "1"})


HARNESSES: dict[str, Callable[[Path], BackendHarness]] = {"embedded": _embedded}


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
