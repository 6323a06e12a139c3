"""Shared by the Postgres CDC task suites: a fresh database per test, the connector
props, and a ``Driver`` that polls a ``PostgresSourceTask`` in-process and commits what
it returned as the runtime would (with the fake offset store of the connector unit
tests; PostgreSQL is real). Each test module starts its own ``PostgresProcess``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "connectors"))

from conn_fakes import FakeOffsetStore, FakeSourceTaskContext
from postgres_process import PASSWORD, PostgresProcess

from connect.api import RetriableError
from connect.converters.json import JsonConverter
from connectors.postgres import PostgresSourceTask

DEADLINE_S = 20.0


def sql(pg: PostgresProcess, *statements: str, dbname: str = "postgres") -> None:
    with psycopg.connect(pg.dsn(dbname), autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


_counter = iter(range(1000))


def fresh_db(pg: PostgresProcess) -> Iterator[str]:
    """A fresh database per test, so slots, publications and tables never collide."""
    name = f"t{next(_counter)}"
    sql(pg, f"CREATE DATABASE {name}")
    yield name
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE database = %s AND NOT active", (name,))


def props(pg: PostgresProcess, db: str, **extra: str) -> dict[str, str]:
    base = {"database.hostname": "127.0.0.1", "database.port": str(pg.port),
            "database.user": "postgres", "database.password": PASSWORD,
            "database.dbname": db, "topic.prefix": "dbserver1", "slot.name": f"slot_{db}",
            "poll.interval.ms": "100"}
    base.update({k.replace("_", "."): v for k, v in extra.items()})
    return base


class Driver:
    """Polls a task and 'commits' what it returned, as the runtime would."""

    def __init__(self, p: dict[str, str], store: FakeOffsetStore | None = None) -> None:
        self.store = store or FakeOffsetStore()
        self.task = PostgresSourceTask()
        self.task.initialize(FakeSourceTaskContext(p, self.store))
        self.task.start(p)
        self.json = JsonConverter()
        self.json.configure({"schemas.enable": "true"}, False)

    def poll_until(self, count: int, timeout: float = DEADLINE_S) -> list[Any]:
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            try:
                got = self.task.poll()
            except RetriableError:
                continue
            if got:
                out += got
        assert len(out) >= count, f"got {len(out)} records of {count}"
        return out

    def quiet(self, seconds: float = 0.6) -> list[Any]:
        out: list[Any] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            got = self.task.poll()
            if got:
                out += got
        return out

    def commit(self, records: list[Any]) -> None:
        self.store.commit(records)
        self.task.commit()

    def payload(self, record: Any) -> Any:
        if record.value is None:
            return None
        raw = self.json.from_connect_data(record.topic, record.value_schema, record.value)
        return json.loads(raw)["payload"]

    def stop(self) -> None:
        self.task.stop()
