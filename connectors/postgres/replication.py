"""A logical replication connection: slot creation with an exported snapshot, the
pgoutput stream over the streaming replication protocol, and standby status updates.

psycopg 3 has no replication API; since 3.3 ``START_REPLICATION`` leaves the connection
in COPY_BOTH, and libpq's copy calls (``pgconn.get_copy_data``/``put_copy_data``) carry
the protocol: XLogData ('w') and keepalives ('k') in, status updates ('r') out. The
walsender accepts only the simple query protocol, hence ``prepare_threshold=None`` and
no bound parameters (names are checked or quoted instead).
"""

from __future__ import annotations

import contextlib
import re
import select
import struct
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from connectors.postgres.config import PostgresConfig
from connectors.postgres.pgoutput import PG_EPOCH_US, format_lsn, parse_lsn

__all__ = ["Keepalive", "ReplicationConnection", "WalMessage"]

_XLOG_HEADER = struct.Struct(">qqq")
_KEEPALIVE = struct.Struct(">qqB")
_STATUS = struct.Struct(">cqqqqB")
_SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")


# Plain (not frozen) slotted dataclasses: one is built per change.
@dataclass(slots=True)
class WalMessage:
    data_start: int  # LSN of the change (or of the transaction's record) it carries
    wal_end: int
    payload: bytes


@dataclass(slots=True)
class Keepalive:
    wal_end: int
    reply_requested: bool


def check_slot_name(name: str) -> str:
    if not _SLOT_NAME.fullmatch(name):
        raise ValueError(f"slot name {name!r} may contain only lower-case letters, digits "
                         "and underscores (at most 63)")
    return name


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class ReplicationConnection:
    """One ``replication=database`` connection; not thread-safe (the task serialises)."""

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self.conn: psycopg.Connection[Any] = psycopg.connect(
            config.conninfo(replication=True), autocommit=True, prepare_threshold=None)
        self._streaming = False

    def create_slot(self, slot: str) -> tuple[int, str]:
        """Create the logical slot, exporting its snapshot: ``(consistent point LSN,
        snapshot name)``. The snapshot stays importable until this connection runs its
        next command."""
        row = self.conn.execute(
            f"CREATE_REPLICATION_SLOT {check_slot_name(slot)} LOGICAL pgoutput "
            "(SNAPSHOT 'export')").fetchone()
        assert row is not None
        return parse_lsn(row[1]), row[2]

    def start(self, slot: str, publication: str, start_lsn: int) -> None:
        """Stream from ``start_lsn`` (the server starts at the slot's confirmed position
        when that is later)."""
        # Logical decoding messages (pg_logical_emit_message) need PostgreSQL 14's
        # 'messages' option, which Debezium sets too.
        messages = ", messages 'true'" if self.conn.info.server_version >= 140000 else ""
        self.conn.execute(
            f"START_REPLICATION SLOT {check_slot_name(slot)} LOGICAL {format_lsn(start_lsn)} "
            f"(proto_version '1', publication_names {_literal(publication)}{messages})")
        self._streaming = True

    def read(self, max_messages: int, timeout_s: float) -> list[WalMessage | Keepalive]:
        """Up to ``max_messages`` messages, waiting at most ``timeout_s`` for the first."""
        pg = self.conn.pgconn
        out: list[WalMessage | Keepalive] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < max_messages:
            n, data = pg.get_copy_data(1)
            if n == 0:
                if out:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                readable, _, _ = select.select([pg.socket], [], [], left)
                if not readable:
                    break
                pg.consume_input()
                continue
            if n == -1:
                result = pg.get_result()
                message = (result.error_message.decode(errors="replace") if result
                           else "the server ended the replication stream")
                raise psycopg.OperationalError(message.strip() or
                                               "the server ended the replication stream")
            buf = bytes(data)
            if buf[0] == 0x77:  # 'w'
                start, end, _ = _XLOG_HEADER.unpack_from(buf, 1)
                out.append(WalMessage(start, end, buf[25:]))
            elif buf[0] == 0x6B:  # 'k'
                end, _, reply = _KEEPALIVE.unpack_from(buf, 1)
                out.append(Keepalive(end, bool(reply)))
        return out

    def send_status(self, flushed_lsn: int) -> None:
        """Report ``flushed_lsn`` as written, flushed and applied: the server may then
        recycle WAL before it and skips transactions committed before it on restart."""
        now = time.time_ns() // 1000 - PG_EPOCH_US
        pg = self.conn.pgconn
        pg.put_copy_data(_STATUS.pack(b"r", flushed_lsn, flushed_lsn, flushed_lsn, now, 0))
        pg.flush()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already broken
            self.conn.close()
