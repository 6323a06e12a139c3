"""What the connector asks PostgreSQL's catalog: tables, columns, keys, types, the
publication, the replication slot and the server's readiness for logical decoding.

Every function takes an open psycopg connection (not a replication one) and returns
plain data; the caller owns the connection and its transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from connectors.postgres.config import PostgresConfig, TableId
from connectors.postgres.types import PgType

__all__ = [
    "CatalogColumn",
    "SlotInfo",
    "captured_tables",
    "ensure_publication",
    "load_types",
    "primary_key",
    "readiness_problems",
    "slot_info",
    "table_columns",
]

log = logging.getLogger(__name__)

_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


@dataclass(frozen=True, slots=True)
class CatalogColumn:
    name: str
    type_oid: int
    typmod: int
    not_null: bool
    default_expr: str | None = None  # pg_get_expr of the column's default


@dataclass(frozen=True, slots=True)
class SlotInfo:
    plugin: str
    database: str
    active: bool
    active_pid: int | None
    confirmed_flush_lsn: str | None
    restart_lsn: str | None
    wal_status: str | None  # reserved, extended, unreserved, lost
    retained_wal_bytes: int | None


def captured_tables(conn: psycopg.Connection[Any], config: PostgresConfig) -> list[TableId]:
    """Ordinary and partitioned tables the include/exclude lists select, sorted."""
    rows = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
        "AND n.nspname <> ALL(%s) AND n.nspname NOT LIKE 'pg_temp%%' "
        "ORDER BY 1, 2", (list(_SYSTEM_SCHEMAS),)).fetchall()
    return [t for t in (TableId(s, n) for s, n in rows) if config.captures_table(t)]


def table_columns(conn: psycopg.Connection[Any], table: TableId) -> list[CatalogColumn]:
    rows = conn.execute(
        "SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, "
        "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a LEFT JOIN pg_attrdef d "
        "ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped "
        "AND a.attgenerated = '' ORDER BY a.attnum", (_regclass(table),)).fetchall()
    return [CatalogColumn(*row) for row in rows]


def primary_key(conn: psycopg.Connection[Any], table: TableId) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) "
        "WITH ORDINALITY AS k(attnum, pos) JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = k.attnum WHERE i.indrelid = %s::regclass AND i.indisprimary "
        "ORDER BY k.pos", (_regclass(table),)).fetchall()
    return [r[0] for r in rows]


def load_types(conn: psycopg.Connection[Any], oids: set[int], known: dict[int, PgType]
               ) -> None:
    """Add to ``known`` the catalog entries of ``oids`` (and of array elements and
    domain bases they name), with enum labels."""
    todo = {o for o in oids if o not in known and o >= 16}
    while todo:
        rows = conn.execute(
            "SELECT t.oid, t.typname, t.typtype, t.typelem, t.typbasetype, "
            "COALESCE((SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) "
            "FROM pg_enum e WHERE e.enumtypid = t.oid), '{}') "
            "FROM pg_type t WHERE t.oid = ANY(%s)", (list(todo),)).fetchall()
        todo = set()
        for oid, name, typtype, elem, base, labels in rows:
            known[oid] = PgType(oid, name, typtype, elem, base, tuple(labels))
            for other in (elem, base):
                if other and other not in known:
                    todo.add(other)


def ensure_publication(conn: psycopg.Connection[Any], config: PostgresConfig,
                       tables: list[TableId]) -> None:
    """Create (or for ``filtered`` align) the publication as
    ``publication.autocreate.mode`` says; raise if ``disabled`` and it is missing."""
    name = config.publication_name
    exists = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s",
                          (name,)).fetchone() is not None
    mode = config.publication_autocreate_mode
    if mode == "disabled":
        if not exists:
            raise PublicationMissing(
                f"publication {name!r} does not exist and publication.autocreate.mode is "
                f"'disabled': create it (CREATE PUBLICATION {name} FOR TABLE ...) or set "
                "publication.autocreate.mode to 'filtered' or 'all_tables'")
        return
    if mode == "all_tables":
        if not exists:
            log.info("creating publication %s FOR ALL TABLES", name)
            conn.execute(sql.SQL("CREATE PUBLICATION {} FOR ALL TABLES").format(
                sql.Identifier(name)))
        return
    if not tables:
        raise PublicationMissing(
            "publication.autocreate.mode is 'filtered' but no table matches the "
            "include/exclude lists")
    table_list = sql.SQL(", ").join(sql.Identifier(t.schema, t.table) for t in tables)
    verb = "ALTER PUBLICATION {} SET TABLE " if exists else "CREATE PUBLICATION {} FOR TABLE "
    log.info("%s publication %s for %s", "altering" if exists else "creating", name,
             ", ".join(map(str, tables)))
    conn.execute(sql.SQL(verb).format(sql.Identifier(name)) + table_list)


class PublicationMissing(RuntimeError):
    """The publication cannot be used as configured."""


def slot_info(conn: psycopg.Connection[Any], slot: str) -> SlotInfo | None:
    row = conn.execute(
        "SELECT plugin, database, active, active_pid, confirmed_flush_lsn::text, "
        "restart_lsn::text, wal_status, "
        "pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint "
        "FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    return None if row is None else SlotInfo(*row)


def readiness_problems(conn: psycopg.Connection[Any], config: PostgresConfig,
                       ) -> list[tuple[str, str]]:
    """``(config key, message)`` for every reason the server cannot serve this connector:
    ``wal_level``, the user's privileges, tables named in the include list that do not
    exist, the publication in ``disabled`` mode, a slot with another plugin."""
    problems: list[tuple[str, str]] = []
    wal_level = conn.execute("SHOW wal_level").fetchone()[0]  # type: ignore[index]
    if wal_level != "logical":
        problems.append(("database.hostname",
                         f"the server's wal_level is '{wal_level}'; logical decoding needs "
                         "wal_level = logical in postgresql.conf (and a restart)"))
    row = conn.execute("SELECT rolreplication, rolsuper FROM pg_roles "
                       "WHERE rolname = current_user").fetchone()
    if row is not None and not (row[0] or row[1]):
        problems.append(("database.user",
                         f"user {config.user!r} lacks the REPLICATION attribute "
                         f"(ALTER ROLE {config.user} WITH REPLICATION)"))
    if (config.publication_autocreate_mode == "all_tables" and row is not None
            and not row[1]):
        exists = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s",
                              (config.publication_name,)).fetchone()
        if exists is None:
            problems.append(("publication.autocreate.mode",
                             f"creating publication {config.publication_name!r} FOR ALL "
                             f"TABLES needs a superuser; use 'filtered' or create it first"))
    if config.publication_autocreate_mode == "disabled":
        exists = conn.execute("SELECT 1 FROM pg_publication WHERE pubname = %s",
                              (config.publication_name,)).fetchone()
        if exists is None:
            problems.append(("publication.name",
                             f"publication {config.publication_name!r} does not exist and "
                             "publication.autocreate.mode is 'disabled'"))
    tables = captured_tables(conn, config)
    for pattern in config.table_include:
        if not any(pattern.fullmatch(str(t)) for t in tables):
            problems.append(("table.include.list",
                             f"no table matches {pattern.pattern!r} in database "
                             f"{config.dbname!r}"))
    for table in tables:
        allowed = conn.execute("SELECT has_table_privilege(%s::regclass, 'SELECT')",
                               (_regclass(table),)).fetchone()
        if allowed is not None and not allowed[0]:
            problems.append(("database.user",
                             f"user {config.user!r} may not SELECT from {table}"))
    slot = slot_info(conn, config.slot_name)
    if slot is not None and slot.plugin != "pgoutput":
        problems.append(("slot.name", f"slot {config.slot_name!r} uses plugin "
                                      f"{slot.plugin!r}, not pgoutput"))
    return problems


def _regclass(table: TableId) -> str:
    return sql.Identifier(table.schema, table.table).as_string(None)
