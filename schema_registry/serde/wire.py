"""The Confluent wire format: magic byte 0, a 4-byte big-endian schema id, the payload.

Every record a Confluent serializer writes starts with these five bytes; the payload is
Avro binary without a container (Avro), UTF-8 JSON text (JSON Schema) or message indexes
then the message (Protobuf). The newest Confluent clients can also write magic byte 1
followed by a 16-byte schema GUID; that framing is recognised and refused with a message,
since Ferry's serializers and registry speak schema ids.
"""

from __future__ import annotations

import struct

from schema_registry.serde.errors import SerializationError

__all__ = ["HEADER_SIZE", "MAGIC_BYTE", "frame", "header", "unframe"]

MAGIC_BYTE = 0
#: Magic byte, then the schema id.
HEADER_SIZE = 5
_MAX_ID = 2**32 - 1
_HEADER = struct.Struct(">bI")


def header(schema_id: int) -> bytes:
    """The five bytes that start a record written with ``schema_id``."""
    if not 0 <= schema_id <= _MAX_ID:
        raise SerializationError(f"Schema id {schema_id} does not fit the wire format's "
                                 "4-byte unsigned id")
    return _HEADER.pack(MAGIC_BYTE, schema_id)


def frame(schema_id: int, payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` framed for ``schema_id``: the bytes to produce."""
    return header(schema_id) + bytes(payload)


def unframe(data: bytes | bytearray | memoryview) -> tuple[int, memoryview]:
    """``(schema id, payload)`` of framed bytes; the payload is a view, not a copy.

    Raises ``SerializationError`` for bytes too short to hold the header or starting with
    another magic byte (data not written by a schema-registry serializer: check the
    topic's producers and the converter configured for it).
    """
    view = memoryview(data)
    if len(view) < HEADER_SIZE:
        raise SerializationError(
            f"Expected at least {HEADER_SIZE} bytes (magic byte 0 and a 4-byte schema id) "
            f"but the data has {len(view)}: it was not written by a Schema Registry "
            "serializer"
        )
    magic = view[0]
    if magic != MAGIC_BYTE:
        if magic == 1:
            detail = ("magic byte 1 (a schema GUID) is written by newer Confluent clients "
                      "configured for GUIDs; configure them to write schema ids")
        else:
            detail = "the data was not written by a Schema Registry serializer"
        raise SerializationError(f"Unknown magic byte {magic:#04x}: {detail}")
    return int.from_bytes(view[1:HEADER_SIZE], "big"), view[HEADER_SIZE:]
