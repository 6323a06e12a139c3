"""Request header v1/v2 and response header v0/v1, encoded and decoded by hand.

Request header v1: api key int16, api version int16, correlation id int32, client id
(int16-length nullable string). v2 (flexible requests) adds a tagged-field section; the
client id stays an int16-length string even then (``RequestHeader.json`` has
"flexibleVersions: none" for it) so that any broker can read an ApiVersions header.
Response header v0 is the correlation id; v1 adds an empty tagged-field section. Hand
written with ``struct``: the header is decoded for every request.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from core.protocol.errors import MalformedRequestError

__all__ = [
    "RequestHeader",
    "parse_request_header",
    "peek_api",
    "read_uvarint",
    "response_header",
]

_PREFIX = struct.Struct(">hhih")  # api key, api version, correlation id, client id length
_CORRELATION = struct.Struct(">i")
_UVARINT_MAX_BYTES = 5


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A decoded request header; ``size`` is how many bytes of the frame it took."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint (as flexible versions use) at ``buf[pos]``:
    ``(value, next position)``. MalformedRequestError if truncated or over 32 bits."""
    value = shift = 0
    for i in range(_UVARINT_MAX_BYTES):
        if pos + i >= len(buf):
            raise MalformedRequestError("truncated varint")
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value > 0xFFFFFFFF:
                raise MalformedRequestError("varint larger than 32 bits")
            return value, pos + i + 1
        shift += 7
    raise MalformedRequestError("varint longer than 5 bytes")


def _skip_tagged_fields(buf: bytes | bytearray | memoryview, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise MalformedRequestError("truncated tagged field in the request header")
    return pos


def peek_api(frame: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)``: the fixed start of every request
    header, readable before the API (and so the header version) is known."""
    if len(frame) < _PREFIX.size:
        raise MalformedRequestError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id, _ = _PREFIX.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


def parse_request_header(frame: bytes | bytearray | memoryview, *, flexible: bool) -> RequestHeader:
    """Decode the request header at the start of ``frame`` (v2 if ``flexible``, else v1)."""
    if len(frame) < _PREFIX.size:
        raise MalformedRequestError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id, length = _PREFIX.unpack_from(frame, 0)
    pos = _PREFIX.size
    client_id: str | None = None
    if length >= 0:
        end = pos + length
        if end > len(frame):
            raise MalformedRequestError("truncated client id in the request header")
        try:
            client_id = bytes(frame[pos:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequestError("client id is not valid UTF-8") from None
        pos = end
    elif length != -1:
        raise MalformedRequestError(f"invalid client id length {length}")
    if flexible:
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def response_header(correlation_id: int, *, flexible: bool) -> bytes:
    """Response header v1 (with an empty tagged-field section) if ``flexible``, else v0."""
    encoded = _CORRELATION.pack(correlation_id)
    return encoded + b"\x00" if flexible else encoded
