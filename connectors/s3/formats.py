"""Object formats: how records become the bytes of one object.

A ``RecordWriter`` writes the records of one object into an ``S3OutputStream``. Its
``write()`` converts the record completely before appending a byte, so a record the
format cannot represent raises ``DataError`` and leaves the object intact (the task then
sends it to the DLQ or fails). ``commit()`` finishes the file (footer, compression trailer)
once and completes the upload; it may be called again after ``S3RetriableError``.
"""

from __future__ import annotations

import hashlib
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from connect.api import DataError, SinkRecord
from connectors.s3.config import S3SinkSettings
from connectors.s3.json_values import to_json_bytes
from connectors.s3.output_stream import S3OutputStream

__all__ = ["Format", "RecordWriter", "format_for"]


class RecordWriter(ABC):
    """The records of one object."""

    def __init__(self, stream: S3OutputStream) -> None:
        self.stream = stream
        self._finished = False

    @abstractmethod
    def write(self, record: SinkRecord) -> None:
        """Append one record; raises ``DataError`` before writing anything if the format
        cannot represent it."""

    def _finish(self) -> None:  # noqa: B027 - most formats have no trailer
        """Write the format's trailer (once)."""

    def upload_full_parts(self) -> None:
        self.stream.upload_full_parts()

    def commit(self) -> None:
        if not self._finished:
            self._finish()
            self._finished = True
        self.stream.commit()

    def abort(self) -> None:
        self.stream.abort()


class _LinesWriter(RecordWriter):
    """One encoded value and a separator per record, optionally gzip'ed as one member.

    Encoded values are collected and joined about ``CHUNK_BYTES`` at a time: one join, one
    copy into the stream and one gzip call per chunk instead of three per record. Chunks
    are cut by the object's own bytes, so the object (gzip'ed too) and its part
    boundaries do not depend on how records arrived in ``put()``."""

    def __init__(self, stream: S3OutputStream, settings: S3SinkSettings,
                 encode: Callable[[Any, Any], bytes], separator: bytes) -> None:
        super().__init__(stream)
        self._encode = encode
        self._separator = separator
        self._gzip = (zlib.compressobj(settings.compression_level, zlib.DEFLATED, 31)
                      if settings.compression == "gzip" else None)
        self._lines: list[bytes] = []
        self._line_bytes = 0

    def write(self, record: SinkRecord) -> None:
        data = self._encode(record.value_schema, record.value)
        self._lines.append(data)
        self._line_bytes += len(data)
        if self._line_bytes >= CHUNK_BYTES:
            self._write_lines()

    def _write_lines(self) -> None:
        lines = self._lines
        if not lines:
            return
        lines.append(b"")  # the join then ends with a separator too
        data = self._separator.join(lines)
        self._lines = []
        self._line_bytes = 0
        self.stream.write(self._gzip.compress(data) if self._gzip else data)

    def _finish(self) -> None:
        self._write_lines()
        if self._gzip is not None:
            self.stream.write(self._gzip.flush())


#: Encoded bytes per chunk of a lines object: well under a part (5 MiB at least).
CHUNK_BYTES = 256 * 1024


def _raw_value(_schema: Any, value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise DataError(f"ByteArrayFormat writes bytes values (ByteArrayConverter); this value "
                    f"is {type(value).__name__}")


class Format:
    """A ``format.class``: its object extension and writer factory."""

    def __init__(self, name: str, extension: str,
                 factory: Callable[[S3OutputStream, SinkRecord], RecordWriter],
                 needs_schema: bool) -> None:
        self.name = name
        self.extension = extension
        self._factory = factory
        self.needs_schema = needs_schema

    def writer(self, stream: S3OutputStream, first: SinkRecord) -> RecordWriter:
        """A writer for an object whose first record is ``first`` (Avro and Parquet take
        the object's schema from it)."""
        return self._factory(stream, first)


def format_for(settings: S3SinkSettings) -> Format:
    """The ``Format`` of ``format.class``."""
    gz = ".gz" if settings.compression == "gzip" else ""
    name = settings.format
    if name == "JsonFormat":
        return Format(name, ".json" + gz, lambda s, _r: _LinesWriter(
            s, settings, to_json_bytes, b"\n"), needs_schema=False)
    if name == "ByteArrayFormat":
        return Format(name, settings.bytearray_extension + gz, lambda s, _r: _LinesWriter(
            s, settings, _raw_value, settings.bytearray_separator), needs_schema=False)
    if name == "AvroFormat":
        from connectors.s3.avro_file import AvroFileWriter
        return Format(name, ".avro", lambda s, r: AvroFileWriter(
            s, _schema_of(r, name), settings.avro_codec, _sync_marker(s.key)),
            needs_schema=True)
    if name == "ParquetFormat":
        from connectors.s3.parquet_file import ParquetFileWriter
        codec = settings.parquet_codec
        ext = ".parquet" if codec == "none" else f".{codec}.parquet"
        return Format(name, ext, lambda s, r: ParquetFileWriter(
            s, _schema_of(r, name), codec), needs_schema=True)
    raise DataError(f"unknown format {name}")


def _schema_of(record: SinkRecord, fmt: str) -> Any:
    if record.value_schema is None:
        raise DataError(f"{fmt} needs records with a value schema (use a schema-aware "
                        "converter such as AvroConverter, or JsonConverter with "
                        "schemas.enable=true)")
    return record.value_schema


def _sync_marker(key: str) -> bytes:
    """Avro's 16-byte sync marker, from the object key rather than random: a file
    rewritten after a crash is then byte-identical to the first upload."""
    return hashlib.md5(key.encode(), usedforsecurity=False).digest()


