"""``transaction.isolation.mode``: Confluent's isolation names as SQLAlchemy isolation
levels, checked against what the connected database's dialect supports.

Confluent's connector refuses ``SQL_SERVER_SNAPSHOT`` on other databases at validation,
and only logs a warning (running the queries at the default level) when the JDBC driver
refuses a level. Ferry refuses both on ``transaction.isolation.mode``: a source asked
for ``SERIALIZABLE`` that silently reads at another level is worse than a 400.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from connect.api import ConfigError
from connectors.jdbc.config import TRANSACTION_ISOLATION_MODE

__all__ = ["apply_isolation", "check_isolation_dialect", "isolation_level"]

#: Confluent's mode -> SQLAlchemy's isolation level name (DEFAULT sets none).
_LEVELS = {
    "READ_UNCOMMITTED": "READ UNCOMMITTED",
    "READ_COMMITTED": "READ COMMITTED",
    "REPEATABLE_READ": "REPEATABLE READ",
    "SERIALIZABLE": "SERIALIZABLE",
    "SQL_SERVER_SNAPSHOT": "SNAPSHOT",
}


def check_isolation_dialect(mode: str, backend: str) -> None:
    """Refuse ``SQL_SERVER_SNAPSHOT`` unless the database is SQL Server (Confluent's
    check, which needs no connection)."""
    if mode == "SQL_SERVER_SNAPSHOT" and backend != "mssql":
        raise ConfigError(TRANSACTION_ISOLATION_MODE, "Isolation mode of "
                          "`SQL_SERVER_SNAPSHOT` can only be configured with a Sql Server "
                          f"Dialect (the database is {backend})", value=mode)


def isolation_level(conn: Connection, mode: str) -> str | None:
    """The SQLAlchemy isolation level for ``mode`` on this connection's database, or None
    for ``DEFAULT``; ``ConfigError`` on ``transaction.isolation.mode`` if the database's
    dialect does not offer it."""
    if mode == "DEFAULT":
        return None
    check_isolation_dialect(mode, conn.dialect.name)
    level = _LEVELS[mode]
    supported = conn.dialect.get_isolation_level_values(
        conn.connection.dbapi_connection)
    if level not in supported:
        offered = ", ".join(m for m, lv in _LEVELS.items() if lv in supported)
        raise ConfigError(TRANSACTION_ISOLATION_MODE, f"{conn.dialect.name} does not "
                          f"support this isolation level; it offers DEFAULT, {offered}",
                          value=mode)
    return level


def apply_isolation(conn: Connection, mode: str) -> None:
    """Set ``mode`` on a freshly checked-out connection, before its first statement (the
    pool puts the default back when the connection is returned)."""
    level = isolation_level(conn, mode)
    if level is not None:
        conn.execution_options(isolation_level=level)
