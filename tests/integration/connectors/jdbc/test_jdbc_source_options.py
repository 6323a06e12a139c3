"""The JDBC source's less common Confluent keys against SQLite files and a real
PostgreSQL: ``query.suffix``, ``timestamp.granularity`` (record values and offsets),
``transaction.isolation.mode`` (applied to the queries, refused where the database has no
such level) and ``catalog.pattern``."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa
from jdbc_support import ConnectorCtx, Runner, execute

from connect.api import ConfigError, ConnectError, RetriableError, Timestamp, Type
from connectors.jdbc import JdbcSourceConnector

pytestmark = pytest.mark.integration

# Stored without a zone, read as wall time in db.timezone (Paris: UTC+2 on that day).
WALL = dt.datetime(2024, 5, 1, 12, 0, 0, 123456)
INSTANT = WALL.replace(tzinfo=dt.timezone(dt.timedelta(hours=2)))
EPOCH_MICROS = int(INSTANT.timestamp()) * 1_000_000 + 123456


def _table(url: str, count: int) -> sa.Engine:
    engine = sa.create_engine(url)
    md = sa.MetaData()
    sa.Table("events", md, sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("at", sa.DateTime, nullable=False),
             sa.Column("seen", sa.DateTime, nullable=True))
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(md.tables["events"].insert(), [
            {"id": i, "at": WALL + dt.timedelta(seconds=i), "seen": None}
            for i in range(count)])
    return engine


def _props(url: str, mode: str, **extra: str) -> dict[str, str]:
    return {"connection.url": url, "mode": mode, "incrementing.column.name": "id",
            "timestamp.column.name": "at", "topic.prefix": "db-",
            "poll.interval.ms": "50", "batch.max.rows": "100",
            "db.timezone": "Europe/Paris", "tables": json.dumps([[None, "events"]]),
            **extra}


def _errors(props: dict[str, str]) -> dict[str, list[str]]:
    result = JdbcSourceConnector().validate(props)
    return {v.name: v.errors for v in result.config_values if v.errors}


# ------------------------------------------------------------------ query.suffix

def test_query_suffix_is_appended_after_the_order_by(db):
    engine = _table(db, 5)
    run = Runner(_props(db, "incrementing", **{"query.suffix": "LIMIT 2"}))
    run.start()
    # Each query reads 2 rows (in id order, so the LIMIT follows the ORDER BY); the
    # offset carries the next query on.
    assert [r.value.get("id") for r in run.poll()] == [0, 1]
    assert [r.value.get("id") for r in run.drain()] == [2, 3, 4]
    run.stop()
    engine.dispose()


def test_a_query_suffix_the_database_refuses_fails_the_poll_with_its_error(db):
    engine = _table(db, 1)
    run = Runner(_props(db, "bulk", **{"query.suffix": "NOT SQL AT ALL"}))
    run.start()
    with pytest.raises(ConnectError, match=r"(?i)syntax"):
        run.poll()
    run.stop()
    engine.dispose()


# ------------------------------------------------------------------ timestamp.granularity

@pytest.mark.parametrize(("granularity", "kind", "expected"), [
    ("connect_logical", Type.INT64, INSTANT),
    ("nanos_long", Type.INT64, EPOCH_MICROS * 1000),
    ("nanos_string", Type.STRING, str(EPOCH_MICROS * 1000)),
    ("nanos_iso_datetime_string", Type.STRING, "2024-05-01T12:00:00.123456000"),
    ("micros_long", Type.INT64, EPOCH_MICROS),
    ("micros_string", Type.STRING, str(EPOCH_MICROS)),
    ("micros_iso_datetime_string", Type.STRING, "2024-05-01T12:00:00.123456"),
])
def test_timestamp_granularity_shapes_values_but_not_offsets(db, granularity, kind, expected):
    engine = _table(db, 3)
    run = Runner(_props(db, "timestamp+incrementing",
                        **{"timestamp.granularity": granularity.upper()}))
    run.start()
    got = run.drain()
    assert [r.value.get("id") for r in got] == [0, 1, 2]
    field = got[0].value_schema.field("at").schema
    assert field.type is kind and not field.optional
    assert got[0].value_schema.field("seen").schema.optional
    assert got[0].value.get("seen") is None
    value = got[0].value.get("at")
    if granularity == "connect_logical":
        assert field.name == Timestamp.LOGICAL_NAME
        assert value == INSTANT
    else:
        assert field.name is None
        assert value == expected
    # The offset is Confluent's whatever the granularity: epoch ms and nanos of the
    # second, of the row's instant (the db.timezone wall time read back).
    last = INSTANT + dt.timedelta(seconds=2)
    assert got[-1].source_offset == {
        "incrementing": 2, "timestamp": int(last.timestamp()) * 1000 + 123,
        "timestamp_nanos": 123456000}
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO events (id, at) VALUES (3, :at)"),
                     {"at": WALL + dt.timedelta(seconds=3)})
    run.restart()
    assert [r.value.get("id") for r in run.drain()] == [3]
    run.stop()
    engine.dispose()


def test_a_bad_timestamp_granularity_names_the_key(tmp_path):
    errors = _errors({"connection.url": f"sqlite:///{tmp_path / 'x.db'}", "mode": "bulk",
                      "timestamp.granularity": "picos_long"})
    assert list(errors) == ["timestamp.granularity"]


# ------------------------------------------------------------------ transaction.isolation.mode

def _isolation_query(url: str) -> str:
    if url.startswith("sqlite"):
        return "SELECT 1 AS id, read_uncommitted AS level FROM pragma_read_uncommitted"
    return "SELECT 1 AS id, current_setting('transaction_isolation') AS level"


@pytest.mark.parametrize("mode", ["DEFAULT", "READ_UNCOMMITTED", "SERIALIZABLE",
                                  "REPEATABLE_READ", "READ_COMMITTED"])
def test_isolation_mode_is_the_level_the_queries_run_at(db, mode):
    sqlite = db.startswith("sqlite")
    if sqlite and mode in ("REPEATABLE_READ", "READ_COMMITTED"):
        pytest.skip("SQLite has no such level (refused: see the test below)")
    p = {"connection.url": db, "mode": "bulk", "topic.prefix": "iso",
         "query": _isolation_query(db), "transaction.isolation.mode": mode}
    assert _errors(p) == {}
    run = Runner(p)
    run.start()
    level = run.poll()[0].value.get("level")
    run.stop()
    if sqlite:
        assert level == (1 if mode == "READ_UNCOMMITTED" else 0)
    else:
        # PostgreSQL's default is read committed.
        wanted = "READ_COMMITTED" if mode == "DEFAULT" else mode
        assert level == wanted.lower().replace("_", " ")


def test_isolation_levels_a_database_lacks_are_refused_on_the_key(db):
    base = {"connection.url": db, "mode": "bulk"}
    errors = _errors({**base, "transaction.isolation.mode": "SQL_SERVER_SNAPSHOT"})
    assert list(errors) == ["transaction.isolation.mode"]
    assert "can only be configured with a Sql Server Dialect" in \
        errors["transaction.isolation.mode"][0]
    # Confluent's names are matched exactly, as its TransactionIsolationMode.valueOf.
    assert list(_errors({**base, "transaction.isolation.mode": "serializable"})) == \
        ["transaction.isolation.mode"]
    if db.startswith("sqlite"):
        errors = _errors({**base, "transaction.isolation.mode": "REPEATABLE_READ"})
        assert list(errors) == ["transaction.isolation.mode"]
        assert "sqlite does not support" in errors["transaction.isolation.mode"][0]
    connector = JdbcSourceConnector()
    connector.initialize(ConnectorCtx())
    with pytest.raises(ConfigError, match=r"transaction\.isolation\.mode"):
        connector.start({**base, "transaction.isolation.mode": "SQL_SERVER_SNAPSHOT"})


# ------------------------------------------------------------------ catalog.pattern

def _tables_read(url: str, **extra: str) -> list[str]:
    connector = JdbcSourceConnector()
    connector.initialize(ConnectorCtx())
    connector.start({"connection.url": url, "mode": "bulk", **extra})
    try:
        return [t[1] for c in connector.task_configs(2) for t in json.loads(c["tables"])]
    finally:
        connector.stop()


def test_catalog_pattern_matches_the_connections_database(db):
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE a (id INTEGER PRIMARY KEY)")
    assert _tables_read(db) == ["a"]
    if db.startswith("sqlite"):
        # SQLite has no catalogs: only "" (or a pattern matching "") finds its tables.
        matching, other = ["", "%"], ["main", "_%"]
    else:
        name = engine.url.database
        assert name is not None
        matching, other = [name, "db%", "d_" + name[2:]], ["postgres", "x%"]
    for pattern in matching:
        assert _tables_read(db, **{"catalog.pattern": pattern}) == ["a"], pattern
    for pattern in other:
        assert _tables_read(db, **{"catalog.pattern": pattern}) == [], pattern
    engine.dispose()


# ------------------------------------------------------------------ reading the DBAPI cursor

def _reader_raw(run: Runner) -> bool:
    assert run.task is not None
    reader = run.task._queriers[0]._reader
    return reader is not None and reader.raw


def test_rows_come_straight_from_the_dbapi_cursor_with_the_types_processors_applied(db):
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE plain (id INTEGER NOT NULL PRIMARY KEY, name TEXT)")
    execute(engine, "INSERT INTO plain VALUES " +
            ", ".join(f"({i}, 'n{i}')" for i in range(10)))
    run = Runner({**_props(db, "incrementing", **{"batch.max.rows": "3"}),
                  "tables": json.dumps([[None, "plain"]])})
    run.start()
    got = run.poll()
    assert _reader_raw(run)  # no column has a result processor, on either database
    got += run.drain()
    assert [(r.value.get("id"), r.value.get("name")) for r in got] == \
        [(i, f"n{i}") for i in range(10)]
    run.stop()
    # SQLite hands datetimes over as text, parsed by the column type's result processor.
    _table(db, 7)
    run = Runner(_props(db, "timestamp+incrementing", **{"batch.max.rows": "3"}))
    run.start()
    got = run.poll()
    assert _reader_raw(run)
    got += run.drain()
    assert [r.value.get("id") for r in got] == list(range(7))
    assert got[-1].value.get("at") == INSTANT + dt.timedelta(seconds=6)
    run.stop()
    engine.dispose()


def test_the_database_lost_while_reading_the_dbapi_cursor_is_retried_without_loss(pg):
    url = pg.url()
    engine = sa.create_engine(url)
    execute(engine, "CREATE TABLE lost (id INTEGER NOT NULL PRIMARY KEY, name TEXT)")
    execute(engine, "INSERT INTO lost SELECT g, 'n' || g FROM generate_series(0, 19) g")
    engine.dispose()
    run = Runner({**_props(url, "incrementing", **{"batch.max.rows": "3"}),
                  "tables": json.dumps([[None, "lost"]]), "connection.attempts": "1"})
    run.start()
    got = run.poll()
    assert _reader_raw(run) and [r.value.get("id") for r in got] == [0, 1, 2]
    pg.stop("fast")
    try:
        # Batches read ahead before the server went away come first (the prefetch
        # thread may hold one, and one FETCH may have been answered); then the loss.
        with pytest.raises(RetriableError):
            for _ in range(5):
                got += run.poll() or []
    finally:
        pg.start()
    assert len(got) < 20  # the loss was met before the end of the table
    got += run.drain(polls=40)
    run.stop()
    assert [r.value.get("id") for r in got] == list(range(20))


# ------------------------------------------------------------------ reflection between runs

def _reflections(run: Runner, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables the task reflects from now on (a spy: the reflection still runs)."""
    from connectors.jdbc import querier
    calls: list[str] = []
    real = querier._reflect_columns

    def spy(conn, table, schema):
        calls.append(table)
        return real(conn, table, schema)

    monkeypatch.setattr(querier, "_reflect_columns", spy)
    return calls


def _with_id(records: list, wanted: int):
    """The last record of row ``wanted``."""
    found = [r for r in records if r.value.get("id") == wanted]
    assert found, [r.value.get("id") for r in records]
    return found[-1]


# Not bulk: its runs follow each other, and a run's open transaction would hold off the
# ALTER TABLE on PostgreSQL (it reads the same cached columns).
@pytest.mark.parametrize("mode", ["incrementing", "timestamp+incrementing"])
def test_columns_are_reflected_once_and_again_when_the_table_changes(db, mode, monkeypatch):
    engine = _table(db, 3)
    run = Runner(_props(db, mode, **{"poll.interval.ms": "10"}))
    reflected = _reflections(run, monkeypatch)
    run.start()
    first = run.drain()
    assert sorted({r.value.get("id") for r in first}) == [0, 1, 2]
    for i in range(3, 5):  # more query runs over the same columns
        execute(engine, f"INSERT INTO events (id, at) VALUES ({i}, :at)",
                {"at": WALL + dt.timedelta(seconds=i)})
        got = _with_id(run.drain(), i)
        # The same schema object too: a converter's per-schema encoder is reused.
        assert got.value_schema is first[0].value_schema
    assert reflected == ["events"]
    # A column added while the task runs is in the next run's records.
    execute(engine, "ALTER TABLE events ADD COLUMN note VARCHAR(20)")
    execute(engine, "INSERT INTO events (id, at, note) VALUES (5, :at, 'hello')",
            {"at": WALL + dt.timedelta(seconds=5)})
    got = _with_id(run.drain(), 5)
    assert got.value.get("note") == "hello"
    assert [f.name for f in got.value_schema.fields] == ["id", "at", "seen", "note"]
    assert reflected == ["events", "events"]
    # A column dropped: its field leaves the records.
    execute(engine, "ALTER TABLE events DROP COLUMN seen")
    execute(engine, "INSERT INTO events (id, at, note) VALUES (6, :at, 'bye')",
            {"at": WALL + dt.timedelta(seconds=6)})
    got = _with_id(run.drain(), 6)
    assert [f.name for f in got.value_schema.fields] == ["id", "at", "note"]
    run.stop()
    engine.dispose()


def test_a_retyped_column_is_reflected_again_on_postgres(pg, monkeypatch):
    url = pg.url()
    engine = sa.create_engine(url)
    execute(engine, "CREATE TABLE retyped (id INTEGER NOT NULL PRIMARY KEY, qty INTEGER)")
    execute(engine, "INSERT INTO retyped VALUES (1, 10)")
    run = Runner({**_props(url, "incrementing", **{"poll.interval.ms": "10"}),
                  "tables": json.dumps([[None, "retyped"]])})
    reflected = _reflections(run, monkeypatch)
    run.start()
    got = run.drain()
    assert got[0].value_schema.field("qty").schema.type is Type.INT32
    # Same names, another type: only the driver's type code tells.
    execute(engine, "ALTER TABLE retyped ALTER COLUMN qty TYPE TEXT")
    execute(engine, "INSERT INTO retyped VALUES (2, 'twenty')")
    got = run.drain()
    assert got[-1].value.get("qty") == "twenty"
    assert got[-1].value_schema.field("qty").schema.type is Type.STRING
    assert reflected == ["retyped", "retyped"]
    run.stop()
    engine.dispose()


def test_a_dropped_table_fails_the_poll_and_is_read_again_once_recreated(pg):
    url = pg.url()
    engine = sa.create_engine(url)
    execute(engine, "CREATE TABLE gone (id INTEGER NOT NULL PRIMARY KEY, name TEXT)")
    execute(engine, "INSERT INTO gone VALUES (1, 'a')")
    run = Runner({**_props(url, "incrementing", **{"poll.interval.ms": "10"}),
                  "tables": json.dumps([[None, "gone"]])})
    run.start()
    assert [r.value.get("id") for r in run.drain()] == [1]
    execute(engine, "DROP TABLE gone")
    with pytest.raises(ConnectError, match="gone"):
        run.drain()
    # Recreated with other columns: the failed run forgot the old ones.
    execute(engine, "CREATE TABLE gone (id INTEGER NOT NULL PRIMARY KEY, label TEXT)")
    execute(engine, "INSERT INTO gone VALUES (2, 'b')")
    got = run.drain()
    assert [(r.value.get("id"), r.value.get("label")) for r in got] == [(2, "b")]
    run.stop()
    engine.dispose()
