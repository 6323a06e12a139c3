"""Kafka Connect's worker group protocol: member metadata and assignment bytes, sans I/O.

Workers join a group with protocol type ``connect``. In JoinGroup each worker offers the
sub-protocols it supports, best first, each with its metadata; the coordinator picks one
every member offers; in SyncGroup the leader hands each worker an assignment. The byte
layouts are Kafka's (``ConnectProtocol``, ``IncrementalCooperativeConnectProtocol``,
``ExtendedAssignment``), all big-endian, strings as ``int16`` length + UTF-8::

    Metadata V0       Version:int16  Url:string  ConfigOffset:int64
    Metadata V1, V2   ... V0 ...  Allocation:nullable bytes   (the member's current
                      assignment, encoded as below with the same version; null if none)
    Assignment V0     Version:int16  Error:int16  Leader:string  LeaderUrl:string
                      ConfigOffset:int64  Assignment:[Connector:string Tasks:[int32]]
    Assignment V1, V2 ... V0 ...  Revoked:[Connector:string Tasks:[int32]]  ScheduledDelay:int32

Arrays are an ``int32`` count then the items (``-1`` = null, read as empty). Task id ``-1``
stands for the connector instance itself. Sub-protocol names and versions: ``default`` (V0,
eager: stop everything on every rebalance), ``compatible`` (V1, KIP-415 incremental
cooperative), ``sessioned`` (V2, V1 plus KIP-507 signed internal requests). In V1 and V2 an
assignment carries only what changes: newly assigned and revoked work; a worker's full
assignment is its previous one minus ``revoked`` plus ``assigned``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from connect.api.errors import ConfigError, ConnectError
from connect.runtime.herder import ConnectorTaskId

__all__ = [
    "CONNECTOR_TASK",
    "CONNECT_PROTOCOL_TYPE",
    "AssignmentError",
    "ConnectProtocol",
    "ConnectProtocolError",
    "ConnectorsAndTasks",
    "ExtendedAssignment",
    "WorkerMetadata",
    "decode_assignment",
    "decode_metadata",
    "encode_assignment",
    "encode_metadata",
    "join_protocols",
]

#: The group protocol type of Connect worker groups.
CONNECT_PROTOCOL_TYPE = "connect"
#: The task id that stands for the connector instance in an assignment.
CONNECTOR_TASK = -1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class ConnectProtocolError(ConnectError):
    """Worker group metadata or an assignment could not be decoded (truncated, negative
    lengths, an unsupported version): a worker speaking another protocol is in the group."""


class ConnectProtocol(StrEnum):
    """The sub-protocols a worker offers in JoinGroup, by their names on the wire."""

    EAGER = "default"
    COMPATIBLE = "compatible"
    SESSIONED = "sessioned"

    @property
    def version(self) -> int:
        """The metadata and assignment version this sub-protocol uses."""
        return {"default": 0, "compatible": 1, "sessioned": 2}[self.value]

    @classmethod
    def from_config(cls, value: str) -> ConnectProtocol:
        """Parse ``connect.protocol`` (``eager``, ``compatible``, ``sessioned``); raises
        ``ConfigError`` for anything else."""
        names = {"eager": cls.EAGER, "default": cls.EAGER, "compatible": cls.COMPATIBLE,
                 "sessioned": cls.SESSIONED}
        try:
            return names[value.strip().lower()]
        except KeyError:
            raise ConfigError("connect.protocol",
                              "String must be one of: eager, compatible, sessioned",
                              value=value) from None


class AssignmentError(IntEnum):
    """The error field of an assignment."""

    NONE = 0
    #: The leader's config snapshot was behind some member's: everyone reads the config
    #: topic to its end and rejoins.
    CONFIG_MISMATCH = 1


def _task_key(task: ConnectorTaskId) -> tuple[str, int]:
    return (task.connector, task.task)


@dataclass(frozen=True)
class ConnectorsAndTasks:
    """A set of connector instances and tasks: what a worker runs, gains or loses."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[ConnectorTaskId] = frozenset()

    @classmethod
    def of(cls, connectors: Iterable[str] = (),
           tasks: Iterable[ConnectorTaskId] = ()) -> ConnectorsAndTasks:
        return cls(frozenset(connectors), frozenset(tasks))

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks

    def __bool__(self) -> bool:
        return not self.is_empty()

    def __or__(self, other: ConnectorsAndTasks) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: ConnectorsAndTasks) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors - other.connectors, self.tasks - other.tasks)

    def __and__(self, other: ConnectorsAndTasks) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors & other.connectors, self.tasks & other.tasks)

    def sorted_connectors(self) -> list[str]:
        return sorted(self.connectors)

    def sorted_tasks(self) -> list[ConnectorTaskId]:
        return sorted(self.tasks, key=_task_key)

    def __str__(self) -> str:
        items = self.sorted_connectors() + [str(t) for t in self.sorted_tasks()]
        return "[" + ", ".join(items) + "]"


EMPTY = ConnectorsAndTasks()


@dataclass(frozen=True)
class ExtendedAssignment:
    """An assignment as SyncGroup carries it (Kafka's ``ExtendedAssignment``).

    ``assigned`` is the work the worker gains (V0: all it runs), ``revoked`` the work it must
    stop (V1+), ``delay_ms`` the time after which the worker should rejoin (V1+: lost work is
    held or revocations are backing off). ``config_offset`` is the config topic position
    the leader assigned from: a worker must have read that far before starting the work.
    """

    version: int
    error: int
    leader: str
    leader_url: str
    config_offset: int
    assigned: ConnectorsAndTasks = EMPTY
    revoked: ConnectorsAndTasks = EMPTY
    delay_ms: int = 0

    @property
    def failed(self) -> bool:
        return self.error != AssignmentError.NONE


@dataclass(frozen=True)
class WorkerMetadata:
    """What a worker says about itself in JoinGroup (Kafka's ``ExtendedWorkerState``).

    ``allocation`` (V1+) is the worker's current full assignment, ``None`` before its first.
    """

    version: int
    url: str
    config_offset: int
    allocation: ExtendedAssignment | None = field(default=None)

    @property
    def current(self) -> ConnectorsAndTasks:
        """The connectors and tasks the worker runs now."""
        return EMPTY if self.allocation is None else self.allocation.assigned


# ---------------------------------------------------------------------------- writing


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ConnectProtocolError(f"string of {len(raw)} bytes is too long for the protocol")
    return _I16.pack(len(raw)) + raw


def _check_version(version: int) -> None:
    if not 0 <= version <= 0x7FFF:
        raise ConnectProtocolError(f"unsupported Connect protocol version {version}")


def _connector_assignments(work: ConnectorsAndTasks) -> bytes:
    """``[Connector, [task ids]]``, connectors sorted, ``-1`` first when the connector
    instance is part of the work, then task ids ascending."""
    by_connector: dict[str, list[int]] = {c: [CONNECTOR_TASK] for c in work.connectors}
    for task in work.sorted_tasks():
        by_connector.setdefault(task.connector, []).append(task.task)
    parts = [_I32.pack(len(by_connector))]
    for connector in sorted(by_connector):
        ids = by_connector[connector]
        parts.append(_string(connector))
        parts.append(_I32.pack(len(ids)))
        parts.extend(_I32.pack(i) for i in ids)
    return b"".join(parts)


def encode_assignment(assignment: ExtendedAssignment) -> bytes:
    """The assignment in the layout of its ``version`` (V0 drops revoked and delay)."""
    _check_version(assignment.version)
    parts = [
        _I16.pack(assignment.version),
        _I16.pack(assignment.error),
        _string(assignment.leader),
        _string(assignment.leader_url),
        _I64.pack(assignment.config_offset),
        _connector_assignments(assignment.assigned),
    ]
    if assignment.version >= 1:
        parts.append(_connector_assignments(assignment.revoked))
        parts.append(_I32.pack(assignment.delay_ms))
    return b"".join(parts)


def encode_metadata(metadata: WorkerMetadata) -> bytes:
    """The metadata in the layout of its ``version``; the allocation (V1+) is written with
    the metadata's version, as Kafka does."""
    _check_version(metadata.version)
    parts = [_I16.pack(metadata.version), _string(metadata.url), _I64.pack(metadata.config_offset)]
    if metadata.version >= 1:
        if metadata.allocation is None:
            parts.append(_I32.pack(-1))
        else:
            allocation = metadata.allocation
            if allocation.version != metadata.version:
                allocation = ExtendedAssignment(
                    metadata.version, allocation.error, allocation.leader,
                    allocation.leader_url, allocation.config_offset, allocation.assigned,
                    allocation.revoked, allocation.delay_ms)
            raw = encode_assignment(allocation)
            parts.append(_I32.pack(len(raw)) + raw)
    return b"".join(parts)


def join_protocols(protocol: ConnectProtocol, url: str, config_offset: int,
                   allocation: ExtendedAssignment | None) -> list[tuple[str, bytes]]:
    """JoinGroup's ``(name, metadata)`` list, best first, as a Kafka worker configured with
    ``connect.protocol=protocol`` sends it: ``sessioned`` also offers ``compatible`` and
    ``default``; ``compatible`` also offers ``default``."""
    order = [ConnectProtocol.SESSIONED, ConnectProtocol.COMPATIBLE, ConnectProtocol.EAGER]
    offered = order[order.index(protocol):]
    return [(p.value, encode_metadata(WorkerMetadata(p.version, url, config_offset,
                                                     allocation if p.version else None)))
            for p in offered]


# ---------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _fail(self, problem: str) -> ConnectProtocolError:
        return ConnectProtocolError(f"malformed Connect {self.what}: {problem} at byte {self.pos}")

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise self._fail("truncated")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def i64(self) -> int:
        return self._take(_I64)

    def string(self) -> str:
        n = self.i16()
        if n < 0:
            raise self._fail("negative string length")
        if self.pos + n > len(self.data):
            raise self._fail("truncated string")
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("string is not UTF-8") from None

    def nullable_bytes(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise self._fail("truncated bytes")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def count(self) -> int:
        """An array length; null (-1) reads as empty."""
        n = self.i32()
        if n < -1:
            raise self._fail("negative array length")
        if n > len(self.data) - self.pos:  # every item takes at least one byte
            raise self._fail("array longer than the data")
        return max(n, 0)

    def remaining(self) -> int:
        return len(self.data) - self.pos


def _read_connector_assignments(r: _Reader) -> ConnectorsAndTasks:
    connectors: set[str] = set()
    tasks: set[ConnectorTaskId] = set()
    for _ in range(r.count()):
        connector = r.string()
        for _ in range(r.count()):
            task = r.i32()
            if task == CONNECTOR_TASK:
                connectors.add(connector)
            else:
                tasks.add(ConnectorTaskId(connector, task))
    return ConnectorsAndTasks(frozenset(connectors), frozenset(tasks))


def _read_version(r: _Reader) -> int:
    version = r.i16()
    if version < 0:
        raise ConnectProtocolError(f"unsupported Connect {r.what} version {version}")
    return version


def decode_assignment(data: bytes) -> ExtendedAssignment:
    """Any version; fields a version lacks (revoked, delay) read as empty and 0, and newer
    versions' extra trailing bytes are ignored, as Kafka's reader tolerates both."""
    r = _Reader(bytes(data), "assignment")
    version = _read_version(r)
    error = r.i16()
    leader = r.string()
    leader_url = r.string()
    config_offset = r.i64()
    assigned = _read_connector_assignments(r)
    revoked = _read_connector_assignments(r) if r.remaining() >= 4 else EMPTY
    delay = r.i32() if r.remaining() >= 4 else 0
    return ExtendedAssignment(version, error, leader, leader_url, config_offset, assigned,
                              revoked, delay)


def decode_metadata(data: bytes) -> WorkerMetadata:
    """Any version; a V0 member (or a V1+ one without allocation) has ``allocation=None``."""
    r = _Reader(bytes(data), "worker metadata")
    version = _read_version(r)
    url = r.string()
    config_offset = r.i64()
    allocation = None
    if r.remaining() >= 4:
        raw = r.nullable_bytes()
        if raw is not None:
            allocation = decode_assignment(raw)
    return WorkerMetadata(version, url, config_offset, allocation)

