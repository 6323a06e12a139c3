"""JdbcSourceConnector: finds the tables to read and spreads them over tasks."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from connect.api import (
    Config,
    ConfigDef,
    ConfigError,
    ConnectError,
    SourceConnector,
    Task,
)
from connectors.jdbc.config import (
    CONNECTION_URL,
    SOURCE_CONFIG_DEF,
    TASK_TABLES,
    SourceConfig,
    plugin_version,
)
from connectors.jdbc.database import describe, open_engine, with_retries
from connectors.jdbc.discovery import TableId, discover_tables
from connectors.jdbc.isolation import check_isolation_dialect, isolation_level
from connectors.jdbc.source_task import JdbcSourceTask
from connectors.jdbc.validation import validate_connector

__all__ = ["JdbcSourceConnector"]

log = logging.getLogger(__name__)


class JdbcSourceConnector(SourceConnector):
    """Confluent's ``JdbcSourceConnector`` on SQLAlchemy (``jdbc-source``).

    Tables are split into ``min(tasks.max, tables)`` contiguous groups, one per task; a
    custom ``query`` is one task. A monitor thread lists the tables every
    ``table.poll.interval.ms`` and asks the runtime for new task configs when the set
    changes, so tables created while the connector runs are picked up.
    """

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._config: SourceConfig | None = None
        self._engine: Engine | None = None
        self._tables: list[TableId] = []
        self._lock = threading.Lock()  # guards _tables
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return SOURCE_CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> Config:
        return validate_connector(
            SOURCE_CONFIG_DEF, connector_configs, SourceConfig.parse,
            precheck=lambda c, engine: check_isolation_dialect(c.isolation_mode,
                                                               engine.dialect.name),
            probe=lambda c, conn: isolation_level(conn, c.isolation_mode))

    def start(self, props: Mapping[str, str]) -> None:
        config = SourceConfig.parse(props)
        self._props, self._config = dict(props), config
        self._engine = open_engine(config.connection)
        check_isolation_dialect(config.isolation_mode, self._engine.dialect.name)
        self._stop.clear()
        if config.query:
            self._check_reachable()
            return
        self._tables = self._list_tables()
        log.info("JDBC source finds %d table(s) on %s: %s", len(self._tables),
                 describe(self._engine), ", ".join(t for _, t in self._tables))
        self._monitor = threading.Thread(target=self._watch_tables, daemon=True,
                                         name="jdbc-table-monitor")
        self._monitor.start()

    def _check_reachable(self) -> None:
        assert self._engine is not None and self._config is not None

        def ping() -> None:
            with self._engine.connect():  # type: ignore[union-attr]
                pass
        try:
            with_retries(self._engine, self._config.connection.attempts,
                         self._config.connection.backoff_ms, "connecting", ping, self._stop)
        except ConnectError as exc:
            raise ConfigError(CONNECTION_URL, f"the database is unreachable: {exc}") from exc

    def _list_tables(self) -> list[TableId]:
        assert self._engine is not None and self._config is not None
        engine, config = self._engine, self._config
        try:
            return with_retries(engine, config.connection.attempts,
                                config.connection.backoff_ms, "listing tables",
                                lambda: discover_tables(engine, config), self._stop)
        except ConnectError as exc:
            raise ConfigError(CONNECTION_URL, f"the database is unreachable: {exc}") from exc

    def _watch_tables(self) -> None:
        assert self._config is not None and self._engine is not None
        while not self._stop.wait(self._config.table_poll_ms / 1000):
            try:
                tables = discover_tables(self._engine, self._config)
            except sa_exc.SQLAlchemyError as exc:
                log.warning("listing tables of %s failed (will try again): %s",
                            describe(self._engine), exc)
                continue
            with self._lock:
                changed = tables != self._tables
                self._tables = tables
            if changed:
                log.info("JDBC source's tables changed to %s; reconfiguring tasks",
                         ", ".join(t for _, t in tables))
                self.context.request_task_reconfiguration()

    def task_class(self) -> type[Task]:
        return JdbcSourceTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        if self._config is not None and self._config.query:
            return [dict(self._props)]
        with self._lock:
            tables = list(self._tables)
        if not tables:
            # Nothing to read yet; the monitor reconfigures once a table appears.
            return []
        groups = min(max_tasks, len(tables))
        size, extra = divmod(len(tables), groups)
        configs, at = [], 0
        for i in range(groups):
            count = size + (1 if i < extra else 0)
            configs.append({**self._props,
                            TASK_TABLES: json.dumps([list(t) for t in tables[at:at + count]])})
            at += count
        return configs

    def stop(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=10)
            self._monitor = None
        if self._engine is not None:
            self._engine.dispose()
