"""Connector-level validation shared by the source and sink: cross-key rules and a probe
of the database, reported against the key at fault (``connection.url`` mostly)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import exc as sa_exc

from connect.api import Config, ConfigDef, ConfigError
from connectors.jdbc.config import CONNECTION_URL
from connectors.jdbc.database import open_engine

__all__ = ["validate_connector"]


def validate_connector(definition: ConfigDef, props: Mapping[str, str],
                       parse: Callable[[Mapping[str, str]], Any]) -> Config:
    """``definition``'s per-key checks; when they pass, the typed parse (cross-key rules)
    and one connection attempt, whose failures name their key."""
    config = Config(definition.validate(props))
    if config.error_count:
        return config
    by_name = {v.name: v for v in config.config_values}
    try:
        parsed = parse(props)
    except ConfigError as exc:
        by_name.get(exc.name or CONNECTION_URL, by_name[CONNECTION_URL]) \
            .add_error_message(str(exc))
        return config
    try:
        engine = open_engine(parsed.connection)
    except ConfigError as exc:
        by_name[CONNECTION_URL].add_error_message(str(exc))
        return config
    try:
        with engine.connect():
            pass
    except (sa_exc.SQLAlchemyError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        by_name[CONNECTION_URL].add_error_message(
            f"Could not connect to {engine.url.render_as_string(hide_password=True)}: "
            f"{reason[0] if reason else type(exc).__name__}")
    finally:
        engine.dispose()
    return config
