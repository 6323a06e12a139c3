"""Destination tables: reflected once and cached, created (``auto.create``) and widened
(``auto.evolve``: ADD COLUMN for new optional fields, never a drop or a retype)."""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import CreateColumn

from connect.api import ConnectError
from connectors.jdbc.config import SinkConfig
from connectors.jdbc.sink_fields import RowLayout
from connectors.jdbc.types import sql_type

__all__ = ["TableManager", "split_table_name"]

log = logging.getLogger(__name__)


def split_table_name(name: str) -> tuple[str | None, str]:
    """``schema.table`` or ``table``."""
    schema, dot, table = name.rpartition(".")
    return (schema or None) if dot else None, table


class TableManager:
    """Knows the destination tables; owned by the sink task's thread."""

    def __init__(self, engine: Engine, config: SinkConfig) -> None:
        self.engine = engine
        self.config = config
        self._quote = config.connection.quote_identifiers
        self._tables: dict[str, sa.Table] = {}
        #: RowLayouts already checked against each table (no DDL needed for them).
        self._checked: set[tuple[str, int]] = set()

    def forget(self) -> None:
        """Drop cached tables (after a failure, the database may have changed)."""
        self._tables.clear()
        self._checked.clear()

    def table_for(self, name: str, layout: RowLayout) -> sa.Table:
        """The table records of ``layout`` go to, created or widened as configured."""
        cached = self._tables.get(name)
        if cached is not None and (name, id(layout)) in self._checked:
            return cached
        with self.engine.begin() as conn:
            table = cached if cached is not None else self._reflect(conn, name)
            if table is None:
                table = self._create(conn, name, layout)
            else:
                table = self._evolve(conn, name, table, layout)
        self._tables[name] = table
        self._checked.add((name, id(layout)))
        return table

    def existing(self, name: str) -> sa.Table | None:
        """The table if it exists (never created: a delete has nothing to do without
        one)."""
        cached = self._tables.get(name)
        if cached is not None:
            return cached
        with self.engine.connect() as conn:
            table = self._reflect(conn, name)
        if table is not None:
            self._tables[name] = table
        return table

    def _reflect(self, conn: Connection, name: str) -> sa.Table | None:
        schema, table = split_table_name(name)
        if not sa.inspect(conn).has_table(table, schema=schema):
            return None
        return sa.Table(table, sa.MetaData(), schema=schema, autoload_with=conn,
                        quote=self._quote)

    def _column(self, spec: Any, *, key: bool, dialect: str) -> sa.Column[Any]:
        return sa.Column(spec.name, sql_type(spec.schema, key=key, dialect=dialect),
                         primary_key=key, nullable=not key and spec.schema.optional,
                         quote=self._quote)

    def _create(self, conn: Connection, name: str, layout: RowLayout) -> sa.Table:
        schema, table_name = split_table_name(name)
        if not self.config.auto_create:
            raise ConnectError(f"Table {name!r} is missing and auto.create is disabled; "
                               "create it or set auto.create=true")
        dialect = conn.dialect.name
        columns = [self._column(c, key=True, dialect=dialect) for c in layout.keys]
        columns += [self._column(c, key=False, dialect=dialect) for c in layout.values]
        table = sa.Table(table_name, sa.MetaData(), *columns, schema=schema,
                         quote=self._quote)
        log.info("Creating table %s with columns %s (primary key %s)", name,
                 ", ".join(c.name for c in columns),
                 ", ".join(c.name for c in layout.keys) or "none")
        table.create(conn, checkfirst=True)
        return table

    def _evolve(self, conn: Connection, name: str, table: sa.Table,
                layout: RowLayout) -> sa.Table:
        existing = {c.name for c in table.columns}
        missing_keys = [c.name for c in layout.keys if c.name not in existing]
        if missing_keys:
            raise ConnectError(f"Table {name!r} lacks the primary key column(s) "
                               f"{', '.join(missing_keys)}; auto.evolve never changes keys")
        missing = [c for c in layout.values if c.name not in existing]
        if not missing:
            return table
        if not self.config.auto_evolve:
            raise ConnectError(f"Table {name!r} lacks column(s) "
                               f"{', '.join(c.name for c in missing)} of the record; add "
                               "them or set auto.evolve=true")
        for spec in missing:
            if not spec.schema.optional and spec.schema.default_value is None:
                raise ConnectError(
                    f"Cannot ALTER TABLE {name!r} to add missing field {spec.name!r}, as "
                    "it is not optional and has no default value; make it optional in "
                    "the record schema or add the column yourself")
        dialect = conn.dialect.name
        prep = conn.dialect.identifier_preparer
        target = prep.format_table(table)
        add = "ADD" if dialect in ("mssql", "oracle") else "ADD COLUMN"
        for spec in missing:
            column = self._column(spec, key=False, dialect=dialect)
            column.nullable = True
            ddl = CreateColumn(column).compile(dialect=conn.dialect)
            log.info("Altering table %s: adding column %s", name, spec.name)
            conn.exec_driver_sql(f"ALTER TABLE {target} {add} {ddl}")
        reflected = self._reflect(conn, name)
        assert reflected is not None
        return reflected
