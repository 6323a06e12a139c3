"""Which tables the source reads: listed from the database, then filtered by the config."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from connectors.jdbc.config import SourceConfig

__all__ = ["TableId", "discover_tables"]

#: (schema or None, table); schema None means the connection's default schema.
TableId = tuple[str | None, str]


def discover_tables(engine: Engine, config: SourceConfig) -> list[TableId]:
    """The tables (and views, if ``table.types`` says so) of ``schema.pattern`` (or the
    default schema), kept by ``table.include.list`` or dropped by ``table.exclude.list``
    (each entry matches ``table`` or ``schema.table``), sorted by name."""
    with engine.connect() as conn:
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
