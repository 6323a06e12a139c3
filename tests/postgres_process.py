"""A real PostgreSQL server from ``initdb`` in a temporary directory, for connector tests.

Shared by every suite that needs PostgreSQL (the CDC source, the JDBC source and sink,
Elasticsearch and Spark CDC). The server itself lives in ``demo.processes`` (``ferry demo``
runs the same one); see there for how it runs as root.

``pg = postgres_fixture()`` in a test module (or a conftest) is the one way a suite gets
its server: one PostgreSQL per test module, started on first use and stopped after the
module's last test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from core.cli.demo.processes import PASSWORD, PostgresServer, PostgresUnavailable, server_bindir

__all__ = ["PASSWORD", "PostgresProcess", "PostgresUnavailable", "postgres_fixture",
           "server_bindir"]

#: The tests' name for it.
PostgresProcess = PostgresServer


def postgres_fixture() -> Callable[..., Iterator[PostgresProcess]]:
    """A module-scoped pytest fixture yielding a started ``PostgresProcess``."""

    @pytest.fixture(scope="module")
    def pg() -> Iterator[PostgresProcess]:
        server = PostgresProcess()
        server.start()
        yield server
        server.close()

    return pg
