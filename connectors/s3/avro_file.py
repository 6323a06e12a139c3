"""Avro object container files, written block by block into the output stream so an
object of any size needs one block of memory (fastavro's ``Writer`` would buffer a block
too, but cannot take a record back once it failed half-encoded)."""

from __future__ import annotations

import io
import json
import zlib
from typing import Any

import cramjam
import fastavro

from connect.api import DataError, Schema, SinkRecord
from connectors.s3.avro_schema import AvroMapping
from connectors.s3.formats import RecordWriter
from connectors.s3.output_stream import S3OutputStream

__all__ = ["AvroFileWriter"]

MAGIC = b"Obj\x01"
#: Uncompressed bytes per block (Avro's default sync interval is 16 KB; larger blocks
#: compress better and cost one more buffer of this size).
BLOCK_BYTES = 64 * 1024


def _long(n: int) -> bytes:
    """Avro's zig-zag varint."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes(b: bytes) -> bytes:
    return _long(len(b)) + b


class AvroFileWriter(RecordWriter):
    def __init__(self, stream: S3OutputStream, schema: Schema, codec: str,
                 sync: bytes) -> None:
        super().__init__(stream)
        self._mapping = AvroMapping(schema)
        self._schema = schema
        try:
            self._parsed = fastavro.parse_schema(self._mapping.avro)
        except Exception as exc:
            raise DataError(f"the value schema maps to an invalid Avro schema: {exc}") from exc
        self._codec = codec
        self._sync = sync
        self._block = bytearray()
        self._count = 0
        meta = {"avro.schema": json.dumps(self._mapping.avro, separators=(",", ":")).encode(),
                "avro.codec": codec.encode()}
        header = bytearray(MAGIC)
        header += _long(len(meta))
        for k, v in meta.items():
            header += _bytes(k.encode()) + _bytes(v)
        header += _long(0) + sync
        stream.write(header)

    def write(self, record: SinkRecord) -> None:
        schema = record.value_schema
        if schema is not self._schema and schema != self._schema:
            raise DataError("the record's value schema differs from the object's (a "
                            "schema.compatibility rotation should have happened)")
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, self._parsed,
                                       self._mapping.value(self._schema, record.value))
        except DataError:
            raise
        except Exception as exc:
            raise DataError(f"the value cannot be written as Avro: {exc}") from exc
        self._block += out.getbuffer()
        self._count += 1
        if len(self._block) >= BLOCK_BYTES:
            self._flush_block()

    def _flush_block(self) -> None:
        if not self._count:
            return
        data: Any = bytes(self._block)
        if self._codec == "deflate":
            c = zlib.compressobj(-1, zlib.DEFLATED, -15)
            data = c.compress(data) + c.flush()
        elif self._codec == "snappy":
            crc = zlib.crc32(data).to_bytes(4, "big")
            data = bytes(cramjam.snappy.compress_raw(data)) + crc
        self.stream.write(_long(self._count) + _long(len(data)))
        self.stream.write(data)
        self.stream.write(self._sync)
        self._block = bytearray()
        self._count = 0

    def _finish(self) -> None:
        self._flush_block()
