"""Kafka's binary key and value schemas of ``__consumer_offsets`` records (pure functions).

Keys start with an int16 version that says what the record is: versions 0 and 1 are
OffsetCommitKey ``(group, topic, partition int32)``, version 2 is GroupMetadataKey
``(group)``; later versions belong to Kafka's newer coordinator and are reported as
``UnknownKey`` so that readers can skip them. OffsetCommitValue:

======= ==========================================================================
version fields after the int16 version
======= ==========================================================================
0       offset int64, metadata string, commit_timestamp int64
1       offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
2       offset int64, metadata string, commit_timestamp int64
3       offset int64, leader_epoch int32, metadata string, commit_timestamp int64
======= ==========================================================================

Strings are an int16 byte length then UTF-8 (length -1 is null). Ferry writes key version 1
and value version 3, as Kafka does. Bytes after the last known field are ignored, as Kafka's
generated readers ignore them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from core.group.errors import OffsetsFormatError

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION",
    "GroupMetadataKey",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "Reader",
    "UnknownKey",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "encode_string",
]

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """The key of a committed offset: one partition of one group."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """The key of a group's membership record; its value is ``metadata_format``'s."""

    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key of a record type Ferry does not read (a newer coordinator's records)."""

    version: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset's value; ``expire_timestamp`` exists only in version 1."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


# ---------------------------------------------------------------------- encoding


def encode_string(value: str) -> bytes:
    """An int16-length-prefixed UTF-8 string."""
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise OffsetsFormatError(
            f"string of {len(data)} bytes does not fit an int16 length prefix: {value[:40]!r}...")
    return _INT16.pack(len(data)) + data


def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey version 1."""
    return (_INT16.pack(OFFSET_COMMIT_KEY_VERSION) + encode_string(group) + encode_string(topic)
            + _INT32.pack(partition))


def encode_group_metadata_key(group: str) -> bytes:
    """GroupMetadataKey version 2."""
    return _INT16.pack(GROUP_METADATA_KEY_VERSION) + encode_string(group)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    """OffsetCommitValue version 3 (``expire_timestamp`` has no place in it and is dropped)."""
    return (_INT16.pack(OFFSET_COMMIT_VALUE_VERSION) + _INT64.pack(value.offset)
            + _INT32.pack(value.leader_epoch) + encode_string(value.metadata)
            + _INT64.pack(value.commit_timestamp))


# ---------------------------------------------------------------------- decoding


class Reader:
    """Reads Kafka's big-endian primitives, raising OffsetsFormatError on short input."""

    def __init__(self, data: bytes, what: str):
        self._data = data
        self._pos = 0
        self._what = what

    def _take(self, size: int) -> bytes:
        end = self._pos + size
        if end > len(self._data):
            raise OffsetsFormatError(
                f"{self._what} is truncated: needs {end} bytes, has {len(self._data)}")
        chunk = self._data[self._pos:end]
        self._pos = end
        return chunk

    def take(self, size: int) -> bytes:
        return self._take(size)

    def int16(self) -> int:
        return _INT16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _INT64.unpack(self._take(8))[0]

    def string(self, *, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0:
            if nullable:
                return None
            raise OffsetsFormatError(f"{self._what} has a null string where one is required")
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OffsetsFormatError(f"{self._what} has a string that is not UTF-8: {exc}") \
                from exc

    def required_string(self) -> str:
        value = self.string()
        assert value is not None
        return value


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    """Decode a record key; raises OffsetsFormatError when it is truncated or malformed."""
    reader = Reader(bytes(data), "__consumer_offsets record key")
    version = reader.int16()
    if 0 <= version <= 1:
        group = reader.required_string()
        topic = reader.required_string()
        return OffsetCommitKey(group, topic, reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.required_string())
    if version < 0:
        raise OffsetsFormatError(f"__consumer_offsets record key has version {version}")
    return UnknownKey(version)


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    """Decode an OffsetCommitValue of version 0 to 3; raises OffsetsFormatError otherwise."""
    reader = Reader(bytes(data), "OffsetCommitValue")
    version = reader.int16()
    if not 0 <= version <= 3:
        raise OffsetsFormatError(
            f"OffsetCommitValue version {version} is not supported (Ferry reads 0 to 3)")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    # Kafka never writes a null metadata string, but older clients' tools might; "" is the
    # value Kafka itself substitutes for no metadata.
    metadata = reader.string(nullable=True) or ""
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else None
    if expire_timestamp == -1:
        expire_timestamp = None  # -1 is the "no expiry" default, as Kafka reads it
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)
