"""How ``ferry consume`` prints a record: the layout of Kafka's DefaultMessageFormatter."""

from __future__ import annotations

from dataclasses import dataclass

from core.backends import ConsumerRecord, TimestampType

__all__ = ["MessageFormatter"]

_TIMESTAMP_NAMES = {
    TimestampType.CREATE_TIME: b"CreateTime:",
    TimestampType.LOG_APPEND_TIME: b"LogAppendTime:",
}
_NULL = b"null"


@dataclass(frozen=True, slots=True)
class MessageFormatter:
    """Renders a record as one output line.

    Fields appear in Kafka's order, each only if enabled: timestamp (``CreateTime:123``),
    partition (``Partition:0``), offset (``Offset:5``), headers (``k1:v1,k2:v2`` or
    ``NO_HEADERS``), key, value. Fields are separated by ``field_separator``, the key from
    the value by ``key_separator``; a null key, value or header value prints ``null``.
    Bytes are written as stored: nothing is decoded.
    """

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    key_separator: bytes = b"\t"
    field_separator: bytes = b"\t"
    line_separator: bytes = b"\n"

    def format(self, record: ConsumerRecord) -> bytes:
        fields: list[bytes] = []
        if self.print_timestamp:
            name = _TIMESTAMP_NAMES.get(record.timestamp_type)  # type: ignore[call-overload]
            fields.append(b"NO_TIMESTAMP" if name is None else name + b"%d" % record.timestamp)
        if self.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            fields.append(_headers(record))
        value = _NULL if record.value is None else record.value
        if self.print_key:
            key = _NULL if record.key is None else record.key
            value = key + self.key_separator + value
        fields.append(value)
        return self.field_separator.join(fields) + self.line_separator

    def format_all(self, records: list[ConsumerRecord]) -> bytes:
        return b"".join(self.format(record) for record in records)


def _headers(record: ConsumerRecord) -> bytes:
    if not record.headers:
        return b"NO_HEADERS"
    return b",".join(
        key.encode("utf-8", "surrogateescape") + b":" + (_NULL if value is None else value)
        for key, value in record.headers
    )
