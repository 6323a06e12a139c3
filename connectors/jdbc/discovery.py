"""Which tables the source reads: listed from the database, then filtered by the config."""

from __future__ import annotations

import logging
import re

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connectors.jdbc.config import SourceConfig

__all__ = ["TableId", "catalog_of", "discover_tables", "like_pattern"]

log = logging.getLogger(__name__)

#: (schema or None, table); schema None means the connection's default schema.
TableId = tuple[str | None, str]


def discover_tables(engine: Engine, config: SourceConfig) -> list[TableId]:
    """The tables (and views, if ``table.types`` says so) of ``schema.pattern`` (or the
    default schema), kept by ``table.include.list`` or dropped by ``table.exclude.list``
    (each entry matches ``table`` or ``schema.table``), sorted by name."""
    with engine.connect() as conn:
        if config.catalog_pattern is not None:
            catalog = catalog_of(conn)
            if not like_pattern(config.catalog_pattern).fullmatch(catalog):
                log.warning("catalog.pattern %r does not match the catalog %r of %s: no "
                            "tables are read", config.catalog_pattern, catalog,
                            engine.url.render_as_string(hide_password=True))
                return []
        inspector = sa.inspect(conn)
        schema = config.schema
        names: list[str] = []
        if "TABLE" in config.table_types:
            names += inspector.get_table_names(schema=schema)
        if "VIEW" in config.table_types:
            names += inspector.get_view_names(schema=schema)
        qualifier = schema or (None if conn.dialect.name == "sqlite"
                               else inspector.default_schema_name)
    found: list[TableId] = []
    for name in sorted(set(names)):
        aliases = {name, f"{qualifier}.{name}" if qualifier else name}
        if config.include and not aliases & set(config.include):
            continue
        if config.exclude and aliases & set(config.exclude):
            continue
        found.append((qualifier, name))
    return found


def catalog_of(conn: Connection) -> str:
    """The catalog a connection is on, as a JDBC driver reports it: the current database
    (PostgreSQL, SQL Server, MySQL/MariaDB, ...), or "" for file databases without
    catalogs (SQLite, DuckDB)."""
    name = conn.dialect.name
    if name in ("sqlite", "duckdb"):
        return ""
    query = {"postgresql": "SELECT current_database()", "mssql": "SELECT DB_NAME()",
             "mysql": "SELECT DATABASE()", "mariadb": "SELECT DATABASE()"}.get(name)
    if query is None:
        return conn.engine.url.database or ""
    return conn.exec_driver_sql(query).scalar() or ""


def like_pattern(pattern: str) -> re.Pattern[str]:
    """A JDBC metadata pattern (SQL LIKE: ``%`` any run, ``_`` one character) as a
    regular expression matched against the whole name."""
    return re.compile("".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
                              for ch in pattern), re.DOTALL)
