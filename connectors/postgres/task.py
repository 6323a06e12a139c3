"""PostgresSourceTask: snapshot, then stream pgoutput changes; advance the slot only
after the runtime stored the offsets of what was delivered.

Lifecycle of one attempt (``_setup``): connect, check the server, create the
publication, inspect the slot and the stored offset, decide whether to snapshot (and
with which slot: a fresh one exports its snapshot), then stream. A lost connection
closes everything and, after a backoff, runs ``_setup`` again from the position of the
last record returned by ``poll()``; ``errors.retry.timeout`` bounds how long.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from connect.api import ConnectError, RetriableError, SourceRecord, SourceTask
from connectors.postgres import catalog
from connectors.postgres.config import PostgresConfig, TableId, plugin_version
from connectors.postgres.events import EventFactory, SourceColumn, TableSchema
from connectors.postgres.incremental import IncrementalSnapshot
from connectors.postgres.pgoutput import Relation, format_lsn, parse_lsn
from connectors.postgres.position import Position
from connectors.postgres.replication import Keepalive, ReplicationConnection
from connectors.postgres.snapshot import Snapshot
from connectors.postgres.stream import ChangeStream
from connectors.postgres.types import PgType, TypeMapper

__all__ = ["PostgresSourceTask"]

log = logging.getLogger(__name__)

_AUTH_STATES = ("28P01", "28000", "3D000", "42501")
#: How often the slot's confirmed LSN and retained WAL are logged while streaming.
SLOT_REPORT_S = 60.0


class FatalError(ConnectError):
    """A problem retrying cannot fix (bad password, wal_level, privileges, lost slot)."""


class PostgresSourceTask(SourceTask):
    def version(self) -> str:
        return plugin_version()

    def start(self, props: Any) -> None:
        self.cfg = PostgresConfig.parse(props)
        self.factory = EventFactory(self.cfg, plugin_version())
        self._lock = threading.Lock()  # guards the connections against stop()/commit()
        self._stopping = threading.Event()
        stored = self.context.offset_storage_reader().offset(self.factory.partition)
        self._stored = Position.from_offset(stored)
        self._position = self._stored  # of the last record poll() returned
        self._db: psycopg.Connection[Any] | None = None
        self._repl: ReplicationConnection | None = None
        self._snapshot: Snapshot | None = None
        self._stream: ChangeStream | None = None
        self._incremental: IncrementalSnapshot | None = None
        self._captured: list[TableId] = []
        self._last_offset: Any = stored  # raw offset of the last record poll() returned
        self._types: dict[int, PgType] = {}
        self._phase = "setup"
        self._confirmed = 0  # the LSN last reported to the server as flushed
        self._to_confirm = 0  # the LSN the stored offsets allow to confirm
        self._last_status = 0.0
        self._last_heartbeat = time.monotonic()
        self._last_slot_report = time.monotonic()
        self._wal_end = 0  # of the last keepalive received outside a transaction
        self._delivered = True  # every record poll() returned has its offset stored
        self._failing_since: float | None = None
        self._retry_at = 0.0
        self._backoff = 0.5
        self._slot_busy_attempts = 0
        self._mapper = TypeMapper(
            decimal_mode=self.cfg.decimal_handling_mode, time_mode=self.cfg.time_precision_mode,
            binary_mode=self.cfg.binary_handling_mode,
            include_unknown=self.cfg.include_unknown_datatypes,
            placeholder=self.cfg.unavailable_value_placeholder, types=self._types,
            interval_mode=self.cfg.interval_handling_mode,
            money_digits=self.cfg.money_fraction_digits)

    # -- poll ---------------------------------------------------------------------------

    def poll(self) -> Sequence[SourceRecord] | None:
        if self._stopping.is_set():
            return None
        wait = self._retry_at - time.monotonic()
        if wait > 0:
            self._stopping.wait(min(wait, 1.0))
            return None
        try:
            with self._lock:
                if self._stopping.is_set():
                    return None
                if self._phase == "setup":
                    self._setup()
                if self._phase == "snapshot":
                    records = self._poll_snapshot()
                elif self._phase == "stream":
                    records = self._poll_stream()
                else:  # initial_only finished: nothing more to do
                    records = None
            self._failing_since, self._backoff = None, 0.5
            if records:
                self._delivered = False
                offset = records[-1].source_offset
                self._position = Position.from_offset(offset)
                self._last_offset = offset
            elif self._phase == "done":
                self._stopping.wait(self.cfg.poll_interval_ms / 1000)
            return records
        except FatalError:
            self._close()
            raise
        except (psycopg.OperationalError, psycopg.errors.AdminShutdown, OSError,
                SlotBusy) as exc:
            return self._retry_later(exc)

    def _retry_later(self, exc: BaseException) -> None:
        self._close()
        if self._stopping.is_set():
            return None
        sqlstate = getattr(exc, "sqlstate", None)
        text = str(exc).strip()
        if sqlstate in _AUTH_STATES or "password authentication failed" in text:
            raise FatalError(f"PostgreSQL refused the connection: {text}") from exc
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        limit = self.cfg.retry_timeout_ms
        if limit >= 0 and (now - self._failing_since) * 1000 >= limit:
            raise FatalError(
                f"PostgreSQL at {self.cfg.hostname}:{self.cfg.port} is unavailable "
                f"({text}); gave up after errors.retry.timeout={limit} ms. Restart the "
                "task once the database is back: it resumes from its stored offset."
            ) from exc
        log.warning("PostgreSQL connection problem (%s); retrying in %.1f s", text,
                    self._backoff)
        self._retry_at = now + self._backoff
        self._backoff = min(self._backoff * 2, 10.0)
        self._phase = "setup"
        raise RetriableError(f"PostgreSQL unavailable: {text}") from exc

    # -- setup --------------------------------------------------------------------------

    def _setup(self) -> None:
        cfg = self.cfg
        self._db = psycopg.connect(cfg.conninfo(), autocommit=True)
        problems = catalog.readiness_problems(self._db, cfg)
        if problems:
            raise FatalError("; ".join(f"{key}: {msg}" for key, msg in problems))
        tables = catalog.captured_tables(self._db, cfg)
        self._captured = tables
        published = tables
        if cfg.signal_table is not None and cfg.signal_table not in tables:
            published = [*tables, cfg.signal_table]  # its inserts carry the signals
        try:
            catalog.ensure_publication(self._db, cfg, published)
        except (catalog.PublicationMissing, psycopg.errors.InsufficientPrivilege) as exc:
            raise FatalError(str(exc)) from exc
        slot = catalog.slot_info(self._db, cfg.slot_name)
        if slot is not None and slot.active:
            self._slot_busy_attempts += 1
            if self._slot_busy_attempts > cfg.slot_max_retries:
                raise FatalError(
                    f"replication slot {cfg.slot_name!r} is active for PID "
                    f"{slot.active_pid}: another connector or client uses it. Give each "
                    "connector its own slot.name, or stop the other consumer.")
            self._retry_at = time.monotonic() + cfg.slot_retry_delay_ms / 1000
            raise SlotBusy(f"slot {cfg.slot_name!r} is active for PID {slot.active_pid}")
        self._slot_busy_attempts = 0
        position = self._position
        mode = cfg.snapshot_mode
        streamed = position is not None and position.snapshot is None
        # A slot ahead of the stored offset is not lost: the task itself confirms the
        # server's keepalive position when everything it emitted is stored.
        lost = slot is None or slot.wal_status == "lost"
        snapshot_done = position is not None and (
            position.snapshot is None or position.snapshot.completed)
        if streamed and lost and mode != "when_needed":
            why = ("does not exist (dropped?)" if slot is None else
                   "was invalidated: the server removed WAL it needed "
                   "(max_slot_wal_keep_size)")
            raise FatalError(
                f"replication slot {cfg.slot_name!r} {why}; changes since LSN "
                f"{format_lsn(position.stream_start)} are lost. Set snapshot.mode="  # type: ignore[union-attr]
                "when_needed (or always) to re-snapshot, or reset the connector's offsets.")
        if mode == "no_data":
            snapshot = False
        elif mode == "always":
            snapshot = True
        elif mode == "when_needed":
            snapshot = not snapshot_done or lost
        else:  # initial, initial_only
            snapshot = not snapshot_done
        if mode == "initial_only" and snapshot_done:
            log.info("snapshot.mode=initial_only and the snapshot is done; not streaming")
            self._phase = "done"
            return
        self._repl = ReplicationConnection(cfg)
        exported = None
        start = position.stream_start if position is not None else 0
        fresh_slot = snapshot and (slot is None or lost or not snapshot_done)
        if slot is not None and (lost or (snapshot and not snapshot_done)):
            # Nothing after its consistent point was ever confirmed: a new slot with an
            # exported snapshot gives a clean seam.
            log.info("dropping replication slot %s to re-create it with a snapshot",
                     cfg.slot_name)
            self._db.execute("SELECT pg_drop_replication_slot(%s)", (cfg.slot_name,))
            slot = None
        if slot is None:
            lsn, name = self._repl.create_slot(cfg.slot_name)
            log.info("created replication slot %s at %s", cfg.slot_name, format_lsn(lsn))
            exported = name if fresh_slot else None
            start = lsn
            if not snapshot:
                self._position = Position(None, None, None, 0)
        elif snapshot and slot.confirmed_flush_lsn:
            start = parse_lsn(slot.confirmed_flush_lsn) if position is None else start
        if snapshot:
            # The consistent point (fresh slot) or where the slot stands: the snapshot
            # then overlaps the stream, which is at-least-once as Debezium documents.
            self._snapshot = Snapshot(cfg, self.factory, tables, self._table_schema,
                                      start, exported)
            self._stream_from = start
            self._phase = "snapshot"
        else:
            self._start_stream(start)

    def _start_stream(self, start: int) -> None:
        assert self._repl is not None
        resume = self._position if (self._position is not None
                                    and self._position.snapshot is None) else None
        if self.cfg.signal_table is not None:
            last = self._last_offset if resume is not None else None
            self._incremental = IncrementalSnapshot(self.cfg, self.factory,
                                                    self._table_schema, last)
        self._stream = ChangeStream(self.cfg, self.factory, self._relation_schema, resume,
                                    start, self._incremental, self._captured)
        self._repl.start(self.cfg.slot_name, self.cfg.publication_name, start)
        self._confirmed = max(self._confirmed, 0)
        log.info("streaming from slot %s at %s", self.cfg.slot_name, format_lsn(start))
        self._phase = "stream"
        if self._incremental is not None and self._incremental.running:
            # Resumed mid-snapshot: the window of the last chunk was lost with the old
            # run; read again from the last row delivered.
            log.info("resuming the incremental snapshot of %s after key %s",
                     self._incremental.queue[0].table, self._incremental.last_key)
            self._incremental.read_chunk()

    # -- schemas ------------------------------------------------------------------------

    def _table_schema(self, conn: psycopg.Connection[Any], table: TableId) -> TableSchema:
        columns = catalog.table_columns(conn, table)
        catalog.load_types(conn, {c.type_oid for c in columns}, self._types)
        return TableSchema(self.cfg.topic_prefix, table,
                           [SourceColumn(c.name, c.type_oid, c.typmod, not c.not_null,
                                         c.default_expr) for c in columns],
                           self._key_names(conn, table), self._mapper, self.cfg)

    def _key_names(self, conn: psycopg.Connection[Any], table: TableId) -> list[str]:
        override = self.cfg.key_columns_for(table)
        return list(override) if override else catalog.primary_key(conn, table)

    def _relation_schema(self, rel: Relation) -> TableSchema | None:
        table = TableId(rel.namespace, rel.name)
        if not self.cfg.captures_table(table):
            return None
        assert self._db is not None
        known = {c.name: c for c in catalog.table_columns(self._db, table)}
        catalog.load_types(self._db, {c.type_oid for c in rel.columns}, self._types)
        columns = []
        for c in rel.columns:
            found = known.get(c.name)
            columns.append(SourceColumn(
                c.name, c.type_oid, c.typmod, found is None or not found.not_null,
                None if found is None else found.default_expr))
        return TableSchema(self.cfg.topic_prefix, table, columns,
                           self._key_names(self._db, table), self._mapper, self.cfg)

    # -- snapshot and stream ------------------------------------------------------------

    def _poll_snapshot(self) -> list[SourceRecord] | None:
        assert self._snapshot is not None
        records = self._snapshot.next_batch(self.cfg.max_batch_size)
        if records is not None:
            return records
        self._snapshot = None
        if self.cfg.snapshot_mode == "initial_only":
            self._phase = "done"
            return None
        self._start_stream(self._stream_from)
        return None

    def _poll_stream(self) -> list[SourceRecord] | None:
        assert self._repl is not None and self._stream is not None
        cfg = self.cfg
        out: list[SourceRecord] = []
        messages = self._repl.read(cfg.max_batch_size, cfg.poll_interval_ms / 1000)
        stream = self._stream
        reply = False
        for msg in messages:
            if isinstance(msg, Keepalive):
                if not stream.in_transaction:
                    self._wal_end = max(self._wal_end, msg.wal_end)
                reply = reply or msg.reply_requested
            else:
                out.extend(stream.handle(msg.data_start, msg.payload))
        now = time.monotonic()
        if cfg.heartbeat_interval_ms and (now - self._last_heartbeat) * 1000 >= \
                cfg.heartbeat_interval_ms:
            self._last_heartbeat = now
            if cfg.heartbeat_action_query and self._db is not None:
                self._db.execute(cfg.heartbeat_action_query)  # type: ignore[arg-type]
            position = stream.idle_position(self._wal_end) if not out else stream.position
            if position is not None:
                out.append(self.factory.heartbeat(stream.offset(position)))
        if not out and self._delivered and not stream.in_transaction:
            # Nothing in flight: every commit before the server's last keepalive was
            # received and is stored, so the slot may move there (an idle or filtered
            # database does not pin WAL, and a shutting-down server is not kept waiting).
            self._to_confirm = max(self._to_confirm, self._wal_end)
        if reply or (now - self._last_status) * 1000 >= cfg.status_update_interval_ms:
            self._send_status()
        if now - self._last_slot_report >= SLOT_REPORT_S and self._db is not None:
            self._last_slot_report = now
            slot = catalog.slot_info(self._db, cfg.slot_name)
            if slot is not None:
                log.info("slot %s: confirmed %s, retains %s bytes of WAL (%s)",
                         cfg.slot_name, slot.confirmed_flush_lsn, slot.retained_wal_bytes,
                         slot.wal_status)
        return out or None

    def _send_status(self) -> None:
        if self._repl is None or self._phase != "stream":
            return
        self._confirmed = max(self._confirmed, self._to_confirm)
        self._repl.send_status(self._confirmed)
        self._last_status = time.monotonic()

    # -- commit and stop ----------------------------------------------------------------

    def commit(self) -> None:
        """The runtime stored offsets: confirm to the server the commit LSN they allow,
        so it keeps only WAL not yet delivered."""
        stored = Position.from_offset(
            self.context.offset_storage_reader().offset(self.factory.partition))
        self._delivered = stored == self._position
        if stored is None or stored.snapshot is not None or stored.lsn_commit is None:
            return
        self._to_confirm = max(self._to_confirm, stored.lsn_commit)
        if self._lock.acquire(timeout=5):
            try:
                self._send_status()
            except (psycopg.Error, OSError):
                log.warning("reporting the confirmed LSN failed; it is sent on reconnect",
                            exc_info=True)
            finally:
                self._lock.release()

    def stop(self) -> None:
        self._stopping.set()
        if self._lock.acquire(timeout=10):
            try:
                self._close()
                if getattr(self, "cfg", None) is not None and self.cfg.slot_drop_on_stop:
                    self._drop_slot()
            finally:
                self._lock.release()

    def _drop_slot(self) -> None:
        try:
            with psycopg.connect(self.cfg.conninfo(), autocommit=True) as conn:
                conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                             "pg_replication_slots WHERE slot_name = %s",
                             (self.cfg.slot_name,))
            log.info("dropped replication slot %s (slot.drop.on.stop)", self.cfg.slot_name)
        except psycopg.Error:
            log.warning("dropping slot %s failed", self.cfg.slot_name, exc_info=True)

    def _close(self) -> None:
        if getattr(self, "_snapshot", None) is not None:
            self._snapshot.close()  # type: ignore[union-attr]
            self._snapshot = None
        if getattr(self, "_repl", None) is not None:
            self._repl.close()  # type: ignore[union-attr]
            self._repl = None
        if getattr(self, "_db", None) is not None:
            with contextlib.suppress(Exception):  # already broken
                self._db.close()  # type: ignore[union-attr]
            self._db = None
        if getattr(self, "_incremental", None) is not None:
            self._incremental.close()  # type: ignore[union-attr]
            self._incremental = None
        self._stream = None


class SlotBusy(RuntimeError):
    """The slot is active for another process; retried ``slot.max.retries`` times."""
