"""Fixtures of the Elasticsearch sink tests: one osmem-server per module, a fresh clone of
it (own port, empty) per test, and the shared worker harness of the Connect tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The runtime tests' harness (a real StandaloneHerder over a real Worker) lives there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "connect"))

from es_support import FaultProxy, start_osmem
from rt_test_connectors import Harness


@pytest.fixture(scope="module")
def osmem():
    server = start_osmem()
    yield server
    server.close()


@pytest.fixture
def es_url(osmem):
    """An empty OpenSearch-compatible server on its own 127.0.0.1 port."""
    with osmem.clone() as clone:
        yield clone.url


@pytest.fixture
def proxy(es_url):
    p = FaultProxy(es_url)
    yield p
    p.close()


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path / "log")
    yield h
    h.close()
