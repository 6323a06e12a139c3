"""Kafka's GroupMetadataValue: a group's membership record in ``__consumer_offsets`` (pure).

The key is GroupMetadataKey (``offsets_format.encode_group_metadata_key``); the value is an
int16 version and then, per Kafka's ``GroupMetadataValue.json``:

======= ==================================================================================
version fields
======= ==================================================================================
0       protocol_type string, generation int32, protocol string?, leader string?,
        members [member_id, client_id, client_host, session_timeout int32,
        subscription bytes, assignment bytes]
1       as 0, members gain rebalance_timeout int32 after client_host
2       as 1, current_state_timestamp int64 after leader
3       as 2, members gain group_instance_id string? after member_id
4       as 3 in Kafka's flexible encoding: compact strings, bytes and arrays (unsigned
        varint length + 1) and a tagged-field section closing the value and each member
======= ==================================================================================

``string?`` is nullable (length -1). Kafka writes version 3 (the highest non-flexible
one), and so does Ferry; every version is read. A record with a null value is the
tombstone of a deleted group.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from core.group.errors import OffsetsFormatError
from core.group.offsets_format import Reader, encode_string

__all__ = [
    "GROUP_METADATA_VALUE_VERSION",
    "GroupMetadataValue",
    "MemberMetadata",
    "decode_group_metadata_value",
    "encode_group_metadata_value",
]

#: The version Kafka writes (MetadataVersion.groupMetadataValueVersion since 2.3).
GROUP_METADATA_VALUE_VERSION = 3
_FLEXIBLE = 4

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member as stored: ``subscription`` is its metadata for the group's protocol."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A group's generation and members. ``current_state_timestamp`` is -1 when unknown
    (versions 0 and 1)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


# ---------------------------------------------------------------------- encoding


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(value: str | None, flexible: bool) -> bytes:
    if flexible:
        if value is None:
            return _uvarint(0)
        data = value.encode("utf-8")
        return _uvarint(len(data) + 1) + data
    if value is None:
        return _INT16.pack(-1)
    return encode_string(value)


def _bytes(value: bytes, flexible: bool) -> bytes:
    if flexible:
        return _uvarint(len(value) + 1) + value
    return _INT32.pack(len(value)) + value


def encode_group_metadata_value(value: GroupMetadataValue,
                                version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    """Encode ``value`` as GroupMetadataValue ``version`` (0-4). Fields a version lacks
    are left out. Raises OffsetsFormatError for a string too long for its length prefix."""
    if not 0 <= version <= _FLEXIBLE:
        raise OffsetsFormatError(f"GroupMetadataValue version {version} does not exist")
    flexible = version >= _FLEXIBLE
    out = [_INT16.pack(version), _string(value.protocol_type, flexible),
           _INT32.pack(value.generation), _string(value.protocol, flexible),
           _string(value.leader, flexible)]
    if version >= 2:
        out.append(_INT64.pack(value.current_state_timestamp))
    count = len(value.members)
    out.append(_uvarint(count + 1) if flexible else _INT32.pack(count))
    for m in value.members:
        out.append(_string(m.member_id, flexible))
        if version >= 3:
            out.append(_string(m.group_instance_id, flexible))
        out += [_string(m.client_id, flexible), _string(m.client_host, flexible)]
        if version >= 1:
            out.append(_INT32.pack(m.rebalance_timeout))
        out += [_INT32.pack(m.session_timeout), _bytes(m.subscription, flexible),
                _bytes(m.assignment, flexible)]
        if flexible:
            out.append(_uvarint(0))  # no tagged fields
    if flexible:
        out.append(_uvarint(0))
    return b"".join(out)


# ---------------------------------------------------------------------- decoding


class _ValueReader(Reader):
    """Adds the flexible (compact) encodings to the classic reader."""

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise OffsetsFormatError("GroupMetadataValue has a malformed varint")

    def text(self, flexible: bool, *, nullable: bool) -> str | None:
        if not flexible:
            return self.string(nullable=nullable)
        length = self.uvarint() - 1
        if length < 0:
            if nullable:
                return None
            raise OffsetsFormatError("GroupMetadataValue has a null string where one is "
                                     "required")
        try:
            return self.take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OffsetsFormatError(f"GroupMetadataValue has a string that is not UTF-8: "
                                     f"{exc}") from exc

    def required_text(self, flexible: bool) -> str:
        value = self.text(flexible, nullable=False)
        assert value is not None
        return value

    def blob(self, flexible: bool) -> bytes:
        length = self.uvarint() - 1 if flexible else self.int32()
        if length < 0:
            return b""  # Kafka's schema has no nullable bytes here; treat null as empty
        return self.take(length)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    """Decode a GroupMetadataValue of version 0 to 4; raises OffsetsFormatError when it is
    truncated, malformed or of another version."""
    reader = _ValueReader(bytes(data), "GroupMetadataValue")
    version = reader.int16()
    if not 0 <= version <= _FLEXIBLE:
        raise OffsetsFormatError(
            f"GroupMetadataValue version {version} is not supported (Ferry reads 0 to 4)")
    flexible = version >= _FLEXIBLE
    protocol_type = reader.required_text(flexible)
    generation = reader.int32()
    protocol = reader.text(flexible, nullable=True)
    leader = reader.text(flexible, nullable=True)
    timestamp = reader.int64() if version >= 2 else -1
    count = reader.uvarint() - 1 if flexible else reader.int32()
    members = []
    for _ in range(max(count, 0)):
        member_id = reader.required_text(flexible)
        instance_id = reader.text(flexible, nullable=True) if version >= 3 else None
        client_id = reader.required_text(flexible)
        client_host = reader.required_text(flexible)
        rebalance_timeout = reader.int32() if version >= 1 else None
        session_timeout = reader.int32()
        subscription = reader.blob(flexible)
        assignment = reader.blob(flexible)
        if flexible:
            reader.skip_tagged_fields()
        # Version 0 has no rebalance timeout: Kafka takes the session timeout for it.
        members.append(MemberMetadata(
            member_id, instance_id, client_id, client_host,
            session_timeout if rebalance_timeout is None else rebalance_timeout,
            session_timeout, subscription, assignment))
    if flexible:
        reader.skip_tagged_fields()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp,
                              tuple(members))
