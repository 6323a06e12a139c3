"""Kafka's consumer embedded protocol: subscription/assignment bytes and the range assignor.

Members of a ``consumer`` group describe themselves in JoinGroup metadata and receive their
partitions in SyncGroup assignments using these byte layouts (ConsumerProtocolSubscription
and ConsumerProtocolAssignment, version 0 written, versions 0-3 read), so that Kafka's
tools can describe Ferry groups and Kafka clients can share a group with Ferry consumers.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.backends.errors import GroupError

__all__ = [
    "Assignment",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "range_assign",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Assignment:
    partitions: dict[str, list[int]] = field(default_factory=dict)
    user_data: bytes | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise GroupError("truncated consumer protocol data")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def string(self) -> str:
        n = self.i16()
        if n < 0 or self.pos + n > len(self.data):
            raise GroupError("malformed string in consumer protocol data")
        text = self.data[self.pos : self.pos + n].decode("utf-8")
        self.pos += n
        return text

    def nullable_bytes(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise GroupError("malformed bytes in consumer protocol data")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def done(self) -> bool:
        return self.pos >= len(self.data)


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def _nullable_bytes(data: bytes | None) -> bytes:
    return _I32.pack(-1) if data is None else _I32.pack(len(data)) + data


def encode_subscription(sub: Subscription) -> bytes:
    """Version 0: topics and user data (what every Kafka client version can read)."""
    parts = [_I16.pack(0), _I32.pack(len(sub.topics))]
    parts += [_string(t) for t in sub.topics]
    parts.append(_nullable_bytes(sub.user_data))
    return b"".join(parts)


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(bytes(data))
    version = r.i16()
    topics = tuple(r.string() for _ in range(r.i32()))
    user_data = r.nullable_bytes()
    owned: list[tuple[str, int]] = []
    if version >= 1 and not r.done():
        for _ in range(r.i32()):
            topic = r.string()
            owned.extend((topic, r.i32()) for _ in range(r.i32()))
    return Subscription(topics, user_data, tuple(owned))


def encode_assignment(assignment: Assignment) -> bytes:
    parts = [_I16.pack(0), _I32.pack(len(assignment.partitions))]
    for topic in sorted(assignment.partitions):
        ps = assignment.partitions[topic]
        parts.append(_string(topic))
        parts.append(_I32.pack(len(ps)))
        parts += [_I32.pack(p) for p in ps]
    parts.append(_nullable_bytes(assignment.user_data))
    return b"".join(parts)


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string (a member the leader gave nothing) is an empty assignment."""
    if not data:
        return Assignment()
    r = _Reader(bytes(data))
    r.i16()
    partitions: dict[str, list[int]] = {}
    for _ in range(r.i32()):
        topic = r.string()
        partitions[topic] = [r.i32() for _ in range(r.i32())]
    user_data = r.nullable_bytes()
    return Assignment(partitions, user_data)


def range_assign(subscriptions: Mapping[str, Subscription],
                 partition_counts: Mapping[str, int]) -> dict[str, Assignment]:
    """Kafka's RangeAssignor: per topic, members sorted by id take contiguous ranges, the
    first ``partitions % members`` taking one extra. Topics absent from
    ``partition_counts`` (unknown) are skipped."""
    by_topic: dict[str, list[str]] = {}
    for member_id, sub in subscriptions.items():
        for topic in sub.topics:
            by_topic.setdefault(topic, []).append(member_id)
    result: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    for topic, members in by_topic.items():
        count = partition_counts.get(topic)
        if not count:
            continue
        members = sorted(members)
        per, extra = divmod(count, len(members))
        start = 0
        for i, member_id in enumerate(members):
            n = per + (1 if i < extra else 0)
            if n:
                result[member_id][topic] = list(range(start, start + n))
            start += n
    return {m: Assignment(parts) for m, parts in result.items()}


def assigned_partitions(assignment: Assignment) -> list[tuple[str, int]]:
    return [(t, p) for t, ps in sorted(assignment.partitions.items()) for p in ps]


def topics_of(subscriptions: Sequence[Subscription]) -> set[str]:
    return {t for s in subscriptions for t in s.topics}
