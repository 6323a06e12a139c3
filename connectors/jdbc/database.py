"""Connecting: JDBC URL translation, the pooled SQLAlchemy engine, and retries with backoff.

Everything outside this module sees an ``Engine`` and ``DatabaseUnavailable``; SQLAlchemy's
connection errors are translated here.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import parse_qsl

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Engine, make_url

from connect.api import ConfigError, RetriableError
from connectors.jdbc.config import CONNECTION_URL, ConnectionConfig

__all__ = ["DatabaseUnavailable", "is_transient", "open_engine", "to_sqlalchemy_url",
           "with_retries"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Idle pooled connections older than this are replaced: servers and proxies drop idle
# connections, and a pre-ping costs a round trip anyway.
_POOL_RECYCLE_S = 1800

#: jdbc:<subprotocol> -> SQLAlchemy dialect+driver; drivers are the ones Ferry's extras
#: install (psycopg 3) or the usual pure-Python choice.
_JDBC_DIALECTS = {
    "postgresql": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
    "sqlserver": "mssql+pyodbc",
    "oracle": "oracle+oracledb",
    "duckdb": "duckdb",
}
_JDBC_URL = re.compile(r"jdbc:(?P<sub>[a-z0-9]+):(?P<rest>.*)", re.IGNORECASE)


class DatabaseUnavailable(RetriableError):
    """The database could not be reached (after ``connection.attempts`` tries)."""


def to_sqlalchemy_url(text: str) -> URL:
    """The SQLAlchemy URL for ``connection.url``: a SQLAlchemy URL as is, or a JDBC URL of
    PostgreSQL, MySQL/MariaDB, SQL Server, Oracle (thin), SQLite or DuckDB translated.
    ``ConfigError`` naming ``connection.url`` otherwise."""
    try:
        return _translate(text)
    except (ValueError, IndexError) as exc:
        raise ConfigError(CONNECTION_URL, f"cannot be read as a database URL ({exc})",
                          value=text) from exc


def _translate(text: str) -> URL:
    match = _JDBC_URL.fullmatch(text.strip())
    if match is None:
        try:
            return make_url(text.strip())
        except sa_exc.ArgumentError as exc:
            raise ConfigError(CONNECTION_URL, "not a SQLAlchemy or JDBC URL "
                              "(e.g. postgresql+psycopg://host/db, sqlite:///file.db, "
                              "jdbc:postgresql://host:5432/db)", value=text) from exc
    sub, rest = match["sub"].lower(), match["rest"]
    if sub in ("sqlite", "duckdb"):
        path = rest.removeprefix("file:")
        if path in ("", ":memory:"):
            return make_url(f"{sub}://")
        return make_url(f"{sub}:///{path}")
    if sub == "sqlserver":
        # jdbc:sqlserver://host:port;databaseName=db;user=u;password=p
        hostport, *props = rest.removeprefix("//").split(";")
        options = dict(p.split("=", 1) for p in props if "=" in p)
        host, _, port = hostport.partition(":")
        db = options.pop("databaseName", options.pop("database", None))
        user = options.pop("user", None)
        password = options.pop("password", None)
        return URL.create(_JDBC_DIALECTS[sub], username=user, password=password,
                          host=host, port=int(port) if port else None, database=db,
                          query={"driver": "ODBC Driver 18 for SQL Server"})
    if sub == "oracle":
        # jdbc:oracle:thin:@//host:port/service or jdbc:oracle:thin:@host:port:sid
        target = rest.split("@", 1)[-1].removeprefix("//")
        host, _, tail = target.partition(":")
        port, name = [*re.split(r"[/:]", tail, maxsplit=1), ""][:2]
        return URL.create(_JDBC_DIALECTS[sub], host=host, port=int(port),
                          query={"service_name": name})
    if sub not in _JDBC_DIALECTS or not rest.startswith("//"):
        known = ", ".join(sorted([*_JDBC_DIALECTS, "sqlite"]))
        raise ConfigError(CONNECTION_URL, f"unknown JDBC subprotocol {sub!r}; known: "
                          f"{known}, or give a SQLAlchemy URL", value=text)
    authority, _, tail = rest[2:].partition("/")
    database, _, query = tail.partition("?")
    params = dict(parse_qsl(query))
    user = params.pop("user", None)
    password = params.pop("password", None)
    host, _, port = authority.rpartition("@")[2].partition(":")
    return URL.create(_JDBC_DIALECTS[sub], username=user, password=password,
                      host=host or None, port=int(port) if port else None,
                      database=database or None)


def open_engine(config: ConnectionConfig) -> Engine:
    """A pooled engine for the configured database: connections are checked before use
    (so one the server dropped is replaced, not handed out) and recycled when old.
    ``ConfigError`` naming ``connection.url`` for an unknown dialect or missing driver."""
    url = to_sqlalchemy_url(config.url)
    if config.user:
        url = url.set(username=config.user)
    if config.password is not None:
        url = url.set(password=config.password.value)
    try:
        engine = sa.create_engine(url, pool_pre_ping=True, pool_recycle=_POOL_RECYCLE_S)
    except (sa_exc.NoSuchModuleError, sa_exc.ArgumentError, ImportError, TypeError,
            ValueError) as exc:
        raise ConfigError(CONNECTION_URL, f"no SQLAlchemy dialect or driver for "
                          f"{url.drivername!r} is installed ({exc})",
                          value=url.render_as_string(hide_password=True)) from exc
    if url.get_backend_name() == "sqlite":
        _tune_sqlite(engine)
    return engine


def _tune_sqlite(engine: Engine) -> None:
    # SQLite locks the whole file: wait for a writer instead of failing at once, and let
    # Python's sqlite3 leave transaction control to SQLAlchemy.
    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_conn.execute("PRAGMA busy_timeout = 10000")


def describe(engine: Engine) -> str:
    """The engine's URL without its password, for messages and logs."""
    return engine.url.render_as_string(hide_password=True)


def is_transient(exc: BaseException) -> bool:
    """Whether a database error is a lost or refused connection (worth retrying), as
    opposed to bad SQL or a constraint violation."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError,
                        sa_exc.DisconnectionError, sa_exc.TimeoutError)):
        text = str(exc.orig if isinstance(exc, sa_exc.DBAPIError) else exc).lower()
        # SQLite reports a locked file as OperationalError: retrying helps there too.
        return not any(s in text for s in ("no such table", "syntax error",
                                           "no such column", "has no column"))
    return False


def with_retries(engine: Engine, attempts: int, backoff_ms: int, what: str,
                 action: Callable[[], T], stop: threading.Event | None = None) -> T:
    """``action()``, retried on transient database errors up to ``attempts`` times with
    ``backoff_ms`` between tries; then ``DatabaseUnavailable`` (retriable for the
    runtime). Other errors propagate at once. ``stop`` cuts the waiting short."""
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except sa_exc.SQLAlchemyError as exc:
            if not is_transient(exc):
                raise
            if attempt == attempts:
                raise DatabaseUnavailable(
                    f"{what} failed after {attempts} attempt(s) on {describe(engine)}: "
                    f"{_first_line(exc)}") from exc
            log.warning("%s failed on %s (attempt %d of %d), retrying in %d ms: %s",
                        what, describe(engine), attempt, attempts, backoff_ms,
                        _first_line(exc))
            engine.dispose()
            if stop is not None:
                if stop.wait(backoff_ms / 1000):
                    raise DatabaseUnavailable(f"{what} interrupted: the task is stopping") \
                        from exc
            else:
                threading.Event().wait(backoff_ms / 1000)
    raise AssertionError("unreachable")


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__

