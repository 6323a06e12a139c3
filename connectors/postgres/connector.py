"""PostgresConnector: Debezium's PostgreSQL connector (``io.debezium.connector.
postgresql.PostgresConnector``) on pgoutput. One task, as in Debezium: a replication
slot is read by one consumer."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import psycopg

from connect.api import (
    Config,
    ConfigDef,
    ConfigError,
    SourceConnector,
    Task,
)
from connectors.postgres import catalog
from connectors.postgres.config import CONFIG_DEF, PostgresConfig, plugin_version
from connectors.postgres.task import PostgresSourceTask

__all__ = ["PostgresConnector"]

log = logging.getLogger(__name__)


class PostgresConnector(SourceConnector):
    """Streams every change of the captured tables into ``<topic.prefix>.<schema>.<table>``
    with Debezium's event format."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        PostgresConfig.parse(props)  # a bad config fails the connector, not its task
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return PostgresSourceTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        """Nothing to release: the task owns the connections."""

    def validate(self, connector_configs: Mapping[str, str]) -> Config:
        """Declared checks, then the cross-key rules, then the server itself:
        connectivity, ``wal_level``, the user's privileges, the included tables."""
        result = Config(CONFIG_DEF.validate(connector_configs))
        if result.error_count:
            return result
        try:
            cfg = PostgresConfig.parse(connector_configs)
        except ConfigError as exc:
            result.add_error(exc.name or "topic.prefix", str(exc))
            return result
        try:
            with psycopg.connect(cfg.conninfo(), autocommit=True) as conn:
                for key, message in catalog.readiness_problems(conn, cfg):
                    result.add_error(key, message)
        except psycopg.OperationalError as exc:
            text = str(exc).strip()
            key = ("database.password" if "password" in text
                   else "database.dbname" if "does not exist" in text and "database" in text
                   else "database.hostname")
            result.add_error(key, f"cannot connect to PostgreSQL at {cfg.hostname}:{cfg.port}: "
                                  f"{text}")
        except psycopg.Error as exc:
            result.add_error("database.user", f"checking the server failed: {exc}")
        return result
