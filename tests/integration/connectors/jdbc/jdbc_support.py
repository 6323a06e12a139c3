"""Helpers of the JDBC connector tests (imported by name; not a test file): databases
(SQLite files, the shared PostgreSQL server), the runtime contexts a task is driven
with directly, and polling helpers.

The contexts below stand in for the Connect runtime when a test drives one task by hand
to control exactly when it polls and restarts; the end-to-end tests
(``test_jdbc_pipeline.py``) run the real worker instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import sqlalchemy as sa

from connect.api import (
    ConnectorContext,
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkRecord,
    SinkTaskContext,
    SourceRecord,
    SourceTaskContext,
    TopicPartition,
)
from connectors.jdbc import JdbcSinkTask, JdbcSourceTask


class OffsetStore(OffsetStorageReader):
    """Offsets as the runtime stores them: the last record's offset per partition,
    through a JSON round trip (as the offsets topic does)."""

    def __init__(self) -> None:
        self.stored: dict[str, Any] = {}

    def commit(self, records: Sequence[SourceRecord]) -> None:
        for r in records:
            if r.source_offset is not None:
                self.stored[json.dumps(r.source_partition, sort_keys=True)] = \
                    json.loads(json.dumps(r.source_offset))

    def offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return self.stored.get(json.dumps(dict(partition), sort_keys=True))

    def offsets(self, partitions: Any) -> Any:
        return {json.dumps(dict(p)): self.offset(p) for p in partitions}


class SourceContext(SourceTaskContext):
    def __init__(self, props: Mapping[str, str], store: OffsetStore) -> None:
        self._props, self._store = props, store

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._store


class Reporter(ErrantRecordReporter):
    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        self.reported.append((record, error))
        done: Future[None] = Future()
        done.set_result(None)
        return done


class SinkContext(SinkTaskContext):
    def __init__(self, props: Mapping[str, str], reporter: Reporter | None = None) -> None:
        self._props, self.reporter = props, reporter
        self.timeout_ms: int | None = None

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        raise AssertionError("the JDBC sink does not seek")

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset()

    def pause(self, *partitions: TopicPartition) -> None:
        pass

    def resume(self, *partitions: TopicPartition) -> None:
        pass

    def request_commit(self) -> None:
        pass

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self.reporter


class ConnectorCtx(ConnectorContext):
    def __init__(self) -> None:
        self.reconfigurations = 0

    def request_task_reconfiguration(self) -> None:
        self.reconfigurations += 1

    def raise_error(self, error: BaseException) -> None:
        raise AssertionError(f"connector raised {error!r}")


def rows(engine: sa.Engine, sql: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql))]


def url_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """``rows`` of ``sql`` through an engine of its own for ``url``, disposed after."""
    engine = sa.create_engine(url)
    try:
        return rows(engine, sql)
    finally:
        engine.dispose()


def started_sink(props: Mapping[str, str], reporter: Reporter | None = None
                 ) -> JdbcSinkTask:
    """A ``JdbcSinkTask`` started on ``props`` in a ``SinkContext`` (``reporter``: its
    errant record reporter)."""
    task = JdbcSinkTask()
    task.initialize(SinkContext(props, reporter))
    task.start(props)
    return task


def execute(engine: sa.Engine, sql: str, params: Any = None) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(sql), params or {})


class Runner:
    """One task at a time over a persistent offset store, as the runtime restarts it."""

    def __init__(self, p: dict[str, str]) -> None:
        self.props, self.store = p, OffsetStore()
        self.task: JdbcSourceTask | None = None

    def start(self) -> None:
        self.task = JdbcSourceTask()
        self.task.initialize(SourceContext(self.props, self.store))
        self.task.start(self.props)

    def poll(self) -> list[Any]:
        assert self.task is not None
        got = self.task.poll() or []
        self.store.commit(got)
        return got

    def drain(self, polls: int = 20) -> list[Any]:
        """Poll until a poll returns nothing after some records (bounded)."""
        out: list[Any] = []
        for _ in range(polls):
            got = self.poll()
            if not got and out:
                break
            out += got
        return out

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.task is not None:
            self.task.stop()
            self.task = None
