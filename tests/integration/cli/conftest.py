"""Fixtures for the ``ferry`` CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import Ferry


@pytest.fixture
def ferry(tmp_path: Path) -> Iterator[Ferry]:
    """A runner on ``tmp_path/data``; kills the processes it started at teardown."""
    runner = Ferry(tmp_path)
    try:
        yield runner
    finally:
        runner.stop_all()
