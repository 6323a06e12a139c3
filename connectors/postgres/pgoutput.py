"""Decode pgoutput (logical replication protocol version 1) messages into dataclasses.

Pure: bytes in, dataclasses out, no I/O. Layouts follow PostgreSQL's "Logical
Replication Message Formats"; every integer is big-endian, strings end in NUL,
timestamps are microseconds since 2000-01-01 UTC. The message classes are plain (not
frozen) slotted dataclasses because one is built per change; nothing mutates them.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

__all__ = [
    "PG_EPOCH_US",
    "UNCHANGED_TOAST",
    "Begin",
    "Column",
    "Commit",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Origin",
    "Relation",
    "Truncate",
    "TypeInfo",
    "Update",
    "decode",
    "format_lsn",
    "parse_lsn",
]

#: Microseconds from the Unix epoch to PostgreSQL's epoch (2000-01-01 UTC).
PG_EPOCH_US = 946_684_800_000_000

#: Stands for a TOASTed value that did not change and so is not in the WAL ('u').
UNCHANGED_TOAST = object()

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_BEGIN = struct.Struct(">qqI")
_COMMIT = struct.Struct(">bqqq")


def format_lsn(lsn: int) -> str:
    """``0/16B3748`` as PostgreSQL prints an LSN."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


@dataclass(slots=True)
class Begin:
    final_lsn: int  # the LSN of the transaction's commit record
    commit_ts_us: int  # Unix epoch microseconds
    xid: int


@dataclass(slots=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(slots=True)
class Origin:
    lsn: int
    name: str


@dataclass(slots=True)
class Column:
    name: str
    type_oid: int
    typmod: int
    in_key: bool  # part of the replica identity


@dataclass(slots=True)
class Relation:
    relid: int
    namespace: str
    name: str
    replica_identity: str  # d, n, f or i
    columns: tuple[Column, ...]


@dataclass(slots=True)
class TypeInfo:
    oid: int
    namespace: str
    name: str


@dataclass(slots=True)
class Insert:
    relid: int
    new: list[object]


@dataclass(slots=True)
class Update:
    relid: int
    old: list[object] | None
    old_kind: str | None  # 'K' (changed key columns) or 'O' (REPLICA IDENTITY FULL)
    new: list[object]


@dataclass(slots=True)
class Delete:
    relid: int
    old: list[object]
    old_kind: str


@dataclass(slots=True)
class Truncate:
    relids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


@dataclass(slots=True)
class LogicalMessage:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


Message = (Begin | Commit | Origin | Relation | TypeInfo | Insert | Update | Delete
           | Truncate | LogicalMessage)


class PgOutputError(ValueError):
    """A pgoutput message that does not follow the protocol."""


def _string(buf: bytes, at: int) -> tuple[str, int]:
    end = buf.index(0, at)
    return buf[at:end].decode(), end + 1


def _py_tuple(buf: bytes, at: int) -> tuple[list[object], int]:
    """TupleData: values as text (str), None for NULL, UNCHANGED_TOAST for 'u'."""
    (ncols,) = _I16.unpack_from(buf, at)
    at += 2
    values: list[object] = []
    append = values.append
    length_at = _I32.unpack_from
    for _ in range(ncols):
        kind = buf[at]
        if kind == 0x74:  # 't' text, by far the most common: first
            end = at + 5 + length_at(buf, at + 1)[0]
            append(buf[at + 5:end].decode())
            at = end
        elif kind == 0x6E:  # 'n'
            append(None)
            at += 1
        elif kind == 0x75:  # 'u'
            append(UNCHANGED_TOAST)
            at += 1
        elif kind == 0x62:  # 'b' binary
            end = at + 5 + length_at(buf, at + 1)[0]
            append(bytes(buf[at + 5:end]))
            at = end
        else:
            raise PgOutputError(f"unknown tuple column kind {chr(kind)!r}")
    return values, at


try:  # the optional C decoder of the same (see _pgoutput_speedups.c)
    from connectors.postgres._pgoutput_speedups import decode_tuple as _c_decode_tuple
except ImportError:  # no compiler at install time
    _tuple = _py_tuple
else:
    _tuple = functools.partial(_c_decode_tuple, UNCHANGED_TOAST, PgOutputError)


def decode(buf: bytes) -> Message:
    """One pgoutput message (the payload of an XLogData message)."""
    kind = buf[0]
    if kind == 0x49:  # 'I'
        (relid,) = _U32.unpack_from(buf, 1)
        values, _ = _tuple(buf, 6)
        return Insert(relid, values)
    if kind == 0x55:  # 'U'
        (relid,) = _U32.unpack_from(buf, 1)
        at = 5
        old = old_kind = None
        if buf[at] in (0x4B, 0x4F):  # 'K', 'O'
            old_kind = chr(buf[at])
            old, at = _tuple(buf, at + 1)
        if buf[at] != 0x4E:
            raise PgOutputError("Update without a new tuple")
        new, _ = _tuple(buf, at + 1)
        return Update(relid, old, old_kind, new)
    if kind == 0x44:  # 'D'
        (relid,) = _U32.unpack_from(buf, 1)
        old, _ = _tuple(buf, 6)
        return Delete(relid, old, chr(buf[5]))
    if kind == 0x42:  # 'B'
        final_lsn, ts, xid = _BEGIN.unpack_from(buf, 1)
        return Begin(final_lsn, ts + PG_EPOCH_US, xid)
    if kind == 0x43:  # 'C'
        _, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(buf, 1)
        return Commit(commit_lsn, end_lsn, ts + PG_EPOCH_US)
    if kind == 0x52:  # 'R'
        (relid,) = _U32.unpack_from(buf, 1)
        namespace, at = _string(buf, 5)
        name, at = _string(buf, at)
        replident = chr(buf[at])
        (ncols,) = _I16.unpack_from(buf, at + 1)
        at += 3
        columns = []
        for _ in range(ncols):
            flags = buf[at]
            col_name, at = _string(buf, at + 1)
            type_oid, typmod = struct.unpack_from(">Ii", buf, at)
            at += 8
            columns.append(Column(col_name, type_oid, typmod, bool(flags & 1)))
        return Relation(relid, namespace or "pg_catalog", name, replident, tuple(columns))
    if kind == 0x59:  # 'Y'
        (oid,) = _U32.unpack_from(buf, 1)
        namespace, at = _string(buf, 5)
        name, _ = _string(buf, at)
        return TypeInfo(oid, namespace, name)
    if kind == 0x54:  # 'T'
        (nrels,) = _I32.unpack_from(buf, 1)
        options = buf[5]
        relids = struct.unpack_from(f">{nrels}I", buf, 6)
        return Truncate(tuple(relids), bool(options & 1), bool(options & 2))
    if kind == 0x4F:  # 'O'
        (lsn,) = _I64.unpack_from(buf, 1)
        name, _ = _string(buf, 9)
        return Origin(lsn, name)
    if kind == 0x4D:  # 'M'
        flags = buf[1]
        (lsn,) = _I64.unpack_from(buf, 2)
        prefix, at = _string(buf, 10)
        (length,) = _I32.unpack_from(buf, at)
        return LogicalMessage(bool(flags & 1), lsn, prefix, bytes(buf[at + 4:at + 4 + length]))
    raise PgOutputError(f"unknown pgoutput message type {chr(kind)!r}")
