"""The SQL a sink batch runs, per ``insert.mode`` and dialect.

Upserts use the database's own statement: ``INSERT ... ON CONFLICT (pk) DO UPDATE`` on
PostgreSQL and SQLite, ``INSERT ... ON DUPLICATE KEY UPDATE`` on MySQL/MariaDB, and
``MERGE`` elsewhere (SQL Server, Oracle, ...). Every statement takes one dict of column
values per row, so SQLAlchemy runs it as an executemany.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

__all__ = ["NATIVE_UPSERTS", "delete_statement", "insert_statement", "merge_sql",
           "update_statement", "upsert_statement"]

_PK_PREFIX = "__pk_"


def insert_statement(table: sa.Table) -> Any:
    return sa.insert(table)


#: Dialects with an upsert statement of their own; every other one gets MERGE. A test
#: takes PostgreSQL (15+ runs MERGE) out of this table to run the MERGE form for real.
NATIVE_UPSERTS = {"postgresql": "on_conflict", "sqlite": "on_conflict",
                  "mysql": "on_duplicate_key", "mariadb": "on_duplicate_key"}


def upsert_statement(table: sa.Table, keys: list[str], dialect: Dialect) -> Any:
    others = [c.name for c in table.columns if c.name not in keys]
    name = dialect.name
    form = NATIVE_UPSERTS.get(name)
    if form == "on_conflict":
        if name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        stmt = insert(table)
        if not others:
            return stmt.on_conflict_do_nothing(index_elements=keys)
        return stmt.on_conflict_do_update(
            index_elements=keys, set_={c: stmt.excluded[c] for c in others})
    if form == "on_duplicate_key":
        from sqlalchemy.dialects.mysql import insert as mysql_insert

        mstmt = mysql_insert(table)
        updates = {c: mstmt.inserted[c] for c in (others or keys[:1])}
        return mstmt.on_duplicate_key_update(updates)
    return sa.text(merge_sql(table, keys, dialect))


def merge_sql(table: sa.Table, keys: list[str], dialect: Dialect) -> str:
    """A standard ``MERGE`` upserting one row given as named parameters (``:column``).

    Each parameter is CAST to its column's type: a bare parameter has no type in the
    USING row, and a NULL (or a string for a non-text column) would then not be
    assignable to the target column (PostgreSQL refuses). SET names bare columns, the
    form SQL Server, Oracle and PostgreSQL all accept. On SQL Server the target takes
    ``WITH (HOLDLOCK)`` (as Confluent's default), so that two writers of a new key
    cannot both take the NOT MATCHED branch."""
    prep = dialect.identifier_preparer
    q = prep.quote
    types = dialect.type_compiler_instance
    target = prep.format_table(table)
    if dialect.name == "mssql":
        target += " WITH (HOLDLOCK)"
    cols = [c.name for c in table.columns]
    others = [c for c in cols if c not in keys]
    dual = " FROM dual" if dialect.name == "oracle" else ""
    source = ", ".join(f"CAST(:{c.name} AS {types.process(c.type)}) AS {q(c.name)}"
                       for c in table.columns)
    on = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys)
    sql = f"MERGE INTO {target} t USING (SELECT {source}{dual}) s ON ({on})"
    if others:
        sql += " WHEN MATCHED THEN UPDATE SET " + ", ".join(
            f"{q(c)} = s.{q(c)}" for c in others)
    sql += (f" WHEN NOT MATCHED THEN INSERT ({', '.join(q(c) for c in cols)}) "
            f"VALUES ({', '.join(f's.{q(c)}' for c in cols)})")
    return sql + (";" if dialect.name == "mssql" else "")


def _key_clause(table: sa.Table, keys: list[str]) -> Any:
    return sa.and_(*(table.c[k] == sa.bindparam(_PK_PREFIX + k) for k in keys))


def update_statement(table: sa.Table, keys: list[str], columns: list[str]) -> Any:
    return sa.update(table).where(_key_clause(table, keys)).values(
        {c: sa.bindparam(c) for c in columns if c not in keys})


def delete_statement(table: sa.Table, keys: list[str]) -> Any:
    return sa.delete(table).where(_key_clause(table, keys))


def key_params(row: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """The bind parameters of a row for ``update_statement``/``delete_statement``."""
    params = {k: v for k, v in row.items() if k not in keys}
    params.update({_PK_PREFIX + k: row[k] for k in keys})
    return params
