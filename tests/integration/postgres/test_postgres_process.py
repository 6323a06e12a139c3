"""The shared PostgreSQL test server: logical decoding on, password auth, crash and restart."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")

from postgres_process import PASSWORD, postgres_fixture  # noqa: E402

pytestmark = pytest.mark.integration


pg = postgres_fixture()


def test_logical_decoding_is_available(pg):
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        assert conn.execute("SHOW wal_level").fetchone() == ("logical",)
        conn.execute("SELECT pg_create_logical_replication_slot('probe', 'pgoutput')")
        conn.execute("SELECT pg_drop_replication_slot('probe')")


def test_a_wrong_password_is_refused(pg):
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg.dsn(password=PASSWORD + "x"))


def test_data_survives_a_crash_and_restart(pg):
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE crash_probe (id int PRIMARY KEY)")
        conn.execute("INSERT INTO crash_probe VALUES (1), (2)")
        conn.execute("CHECKPOINT")
    pg.kill()
    pg.start()
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM crash_probe").fetchone() == (2,)
