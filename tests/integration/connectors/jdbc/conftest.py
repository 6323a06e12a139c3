"""Fixtures shared by the JDBC source and sink suites: one PostgreSQL per test module and a
fresh database per test, on SQLite or on that server."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import sqlalchemy as sa
from postgres_process import postgres_fixture

_counter = itertools.count()


pg = postgres_fixture()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path: Path) -> str:
    """A fresh database URL: a SQLite file, or a new database on the module's server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    pg = request.getfixturevalue("pg")
    name = f"db{next(_counter)}"
    admin = sa.create_engine(pg.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    return pg.url(name)
