"""JdbcSourceTask: polls its tables (or the custom query) and turns rows into records."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from connect.api import ConnectError, RetriableError, SourceRecord, SourceTask
from connectors.jdbc.config import TASK_TABLES, SourceConfig, plugin_version
from connectors.jdbc.database import describe, is_transient, open_engine, with_retries
from connectors.jdbc.offsets import TableOffset, table_partition_v0
from connectors.jdbc.querier import TableQuerier
from connectors.jdbc.row_reader import QueryInterrupted

__all__ = ["JdbcSourceTask"]

log = logging.getLogger(__name__)

# poll() returns at least this often so the runtime can commit, pause and stop.
_MAX_WAIT_S = 1.0


class JdbcSourceTask(SourceTask):
    """Reads the tables its task config lists (``tables``: JSON list of [schema, table])
    or the custom ``query``; one querier each, polled in turn by due time.

    ``start()``/``poll()`` run on the task thread; ``stop()`` on another, and only sets
    the stop event (the task thread closes what it opened).
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._queriers: list[TableQuerier] = []
        self._engine: Engine | None = None
        self._config: SourceConfig | None = None
        # Held by poll() while it works, so stop() (another thread) closes connections
        # only when no query is reading from them.
        self._lock = threading.Lock()

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        config = SourceConfig.parse(props)
        self._config = config
        self._engine = open_engine(config.connection)
        reader = self.context.offset_storage_reader()
        if config.query:
            querier = TableQuerier(config, self._engine, stop=self._stop)
            stored = reader.offset(querier.partition)
            if stored:
                querier.offset = TableOffset.from_map(stored)
            self._queriers = [querier]
        else:
            for schema, table in json.loads(props.get(TASK_TABLES, "[]")):
                querier = TableQuerier(config, self._engine, schema=schema, table=table,
                                       stop=self._stop)
                stored = reader.offset(querier.partition) or \
                    reader.offset(table_partition_v0(table))
                if stored:
                    querier.offset = TableOffset.from_map(stored)
                self._queriers.append(querier)
        log.info("JDBC source task reads %s from %s",
                 ", ".join(q.name for q in self._queriers) or "nothing",
                 describe(self._engine))

    def poll(self) -> Sequence[SourceRecord] | None:
        with self._lock:
            return self._poll()

    def _poll(self) -> Sequence[SourceRecord] | None:
        config, engine = self._config, self._engine
        if config is None or engine is None:
            raise ConnectError("JdbcSourceTask.poll() before start()")
        deadline = time.monotonic() + _MAX_WAIT_S
        while not self._stop.is_set():
            if not self._queriers:
                self._stop.wait(max(0.0, deadline - time.monotonic()))
                return None
            querier = min(self._queriers, key=lambda q: (not q.querying, q.next_run))
            wait = querier.next_run - time.monotonic()
            if not querier.querying and wait > 0:
                if time.monotonic() + wait > deadline:
                    self._stop.wait(max(0.0, deadline - time.monotonic()))
                    return None
                self._stop.wait(wait)
                continue
            try:
                if not querier.querying:
                    with_retries(engine, config.connection.attempts,
                                 config.connection.backoff_ms, f"querying {querier.name}",
                                 querier.start_query, self._stop)
                records = querier.next_batch()
            except QueryInterrupted:
                # stop() while the next batch was being fetched: the query is dropped
                # where the offset is (its prefetch thread ended, a blocked FETCH
                # cancelled) and stop() closes the rest.
                querier.close()
                return None
            except sa_exc.SQLAlchemyError as exc:
                querier.close()
                if is_transient(exc):
                    # The in-memory offset is that of the last record returned, so the
                    # re-run query neither skips nor repeats rows.
                    raise RetriableError(f"reading {querier.name} failed: {exc}") from exc
                raise ConnectError(f"reading {querier.name} failed: {exc}") from exc
            except RetriableError:
                querier.close()
                raise
            if records:
                return records
            if time.monotonic() >= deadline:
                return None
        return None

    def stop(self) -> None:
        self._stop.set()
        if not self._lock.acquire(timeout=30):
            log.warning("JDBC source task: poll() did not return within 30 s of stop(); "
                        "leaving its connections to be closed when it ends")
            return
        try:
            for querier in self._queriers:
                querier.close()
            if self._engine is not None:
                self._engine.dispose()
        finally:
            self._lock.release()
