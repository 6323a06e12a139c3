"""Connector-level validation shared by the source and sink: cross-key rules and a probe
of the database, reported against the key at fault (``connection.url`` mostly)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine

from connect.api import Config, ConfigDef, ConfigError
from connectors.jdbc.config import CONNECTION_URL
from connectors.jdbc.database import open_engine

__all__ = ["validate_connector"]


def validate_connector(definition: ConfigDef, props: Mapping[str, str],
                       parse: Callable[[Mapping[str, str]], Any], *,
                       precheck: Callable[[Any, Engine], None] | None = None,
                       probe: Callable[[Any, Connection], None] | None = None) -> Config:
    """``definition``'s per-key checks; when they pass, the typed parse (cross-key rules)
    and one connection attempt, whose failures name their key. ``precheck`` (given the
    parsed config and the engine, before connecting) and ``probe`` (given the open
    connection) raise ``ConfigError`` naming their key."""
    config = Config(definition.validate(props))
    if config.error_count:
        return config
    try:
        parsed = parse(props)
    except ConfigError as exc:
        config.add_error(exc.name, str(exc), CONNECTION_URL)
        return config
    try:
        engine = open_engine(parsed.connection)
    except ConfigError as exc:
        config.add_error(CONNECTION_URL, str(exc))
        return config
    try:
        if precheck is not None:
            precheck(parsed, engine)
        with engine.connect() as conn:
            if probe is not None:
                probe(parsed, conn)
    except ConfigError as exc:
        config.add_error(exc.name or CONNECTION_URL, str(exc))
    except (sa_exc.SQLAlchemyError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        config.add_error(CONNECTION_URL, "Could not connect to "
                         f"{engine.url.render_as_string(hide_password=True)}: "
                         f"{reason[0] if reason else type(exc).__name__}")
    finally:
        engine.dispose()
    return config
