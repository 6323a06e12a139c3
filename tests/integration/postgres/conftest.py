"""Fixtures of the Postgres CDC suites: ``db``, a fresh database per test on the module's
server (``pg = postgres_fixture()`` in each module), so slots, publications and tables
never collide."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def db(pg) -> Iterator[str]:
    from pgcdc_driver import fresh_db  # psycopg: the modules skip themselves without it

    yield from fresh_db(pg)
