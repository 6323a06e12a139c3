"""Connect records: what source tasks produce, sink tasks receive and transforms rewrite."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, Self

from connect.api.coordinates import TimestampType
from connect.api.data import Schema
from connect.api.errors import DataError
from connect.api.header import Header, Headers

__all__ = ["ConnectRecord", "SinkRecord", "SourceRecord", "headers_or_none"]


class _Keep(Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP


# The classes are dataclasses for their fields, repr, equality and ``dataclasses``
# helpers, but write their own ``__init__``: a frozen dataclass's generated one sets each
# field through ``object.__setattr__`` (and a SinkRecord's then three more in
# ``__post_init__``), which was most of the cost of building a record, and source and
# sink tasks build one per row. Each ``__init__`` fills the instance dict in one step
# and checks what ``__post_init__`` checks; ``__post_init__`` stays for dataclass
# subclasses, whose generated ``__init__`` calls it.
@dataclasses.dataclass(frozen=True, kw_only=True, init=False)
class ConnectRecord:
    """What every Connect record has: a topic and optional partition, a key and a value
    each with its schema (None for schemaless data), a timestamp in epoch milliseconds
    and headers.

    Records are immutable apart from their ``headers``, which a transformation may change
    in place; derive a changed record with ``new_record``. Construct with keywords. Not
    hashable (keys and values may be dicts).
    """

    topic: str
    kafka_partition: int | None = None
    key_schema: Schema | None = None
    key: Any = None
    value_schema: Schema | None = None
    value: Any = None
    timestamp: int | None = None
    headers: Headers = dataclasses.field(default_factory=Headers)

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, *, topic: str, kafka_partition: int | None = None,
                 key_schema: Schema | None = None, key: Any = None,
                 value_schema: Schema | None = None, value: Any = None,
                 timestamp: int | None = None,
                 headers: Headers | Iterable[Header] | None = None) -> None:
        object.__setattr__(self, "__dict__", {
            "topic": topic if type(topic) is str else _topic(topic),
            "kafka_partition": kafka_partition,
            "key_schema": key_schema, "key": key, "value_schema": value_schema,
            "value": value, "timestamp": timestamp,
            "headers": headers if type(headers) is Headers else _headers(headers)})

    def __post_init__(self) -> None:
        _topic(self.topic)
        if type(self.headers) is not Headers:
            object.__setattr__(self, "headers", _headers(self.headers))

    def new_record(
        self,
        *,
        topic: str | _Keep = _KEEP,
        kafka_partition: int | _Keep | None = _KEEP,
        key_schema: Schema | _Keep | None = _KEEP,
        key: Any = _KEEP,
        value_schema: Schema | _Keep | None = _KEEP,
        value: Any = _KEEP,
        timestamp: int | _Keep | None = _KEEP,
        headers: Headers | Iterable[Header] | _Keep = _KEEP,
    ) -> Self:
        """A copy with the given attributes changed, as transformations make them.

        Attributes not named are kept, including a source record's partition and offset
        and a sink record's Kafka offset and original coordinates. Unless ``headers`` is
        given the copy gets a duplicate of this record's headers, so changing one
        record's headers never changes the other's.
        """
        # A shallow copy of the instance dict, not dataclasses.replace: transformations
        # call this once per record, and replace() re-runs __init__ and __post_init__.
        fields = self.__dict__.copy()
        copy = object.__new__(type(self))
        object.__setattr__(copy, "__dict__", fields)
        if topic is not _KEEP:
            if not isinstance(topic, str):
                raise DataError(f"A record's topic is a str, not {type(topic).__name__}")
            fields["topic"] = topic
        if kafka_partition is not _KEEP:
            fields["kafka_partition"] = kafka_partition
        if key_schema is not _KEEP:
            fields["key_schema"] = key_schema
        if key is not _KEEP:
            fields["key"] = key
        if value_schema is not _KEEP:
            fields["value_schema"] = value_schema
        if value is not _KEEP:
            fields["value"] = value
        if timestamp is not _KEEP:
            fields["timestamp"] = timestamp
        if headers is _KEEP:
            # A record whose headers were never made keeps none: its copy makes its own.
            own = fields.get("headers")
            if own is not None:
                fields["headers"] = own.duplicate()
        elif not isinstance(headers, Headers):
            fields["headers"] = Headers(headers or ())
        else:
            fields["headers"] = headers
        return copy


class _LazyHeaders:
    """``ConnectRecord.headers`` for records built without headers (``SourceRecord``s
    from their constructor or ``many``): the first read makes the record's own empty
    Headers and stores it in the instance dict, which later reads find first (a
    non-data descriptor). A source task's records mostly carry none, and a Headers
    made per record was a fifth of a record's cost; the runtime reads them through
    ``headers_or_none``, which makes none."""

    def __get__(self, record: ConnectRecord | None, owner: type | None = None) -> Any:
        if record is None:
            return self
        headers = record.__dict__["headers"] = Headers()
        return headers


# After the decorator: a dataclass takes a class attribute for the field's default.
ConnectRecord.headers = _LazyHeaders()  # type: ignore[assignment]


def headers_or_none(record: ConnectRecord) -> Headers | None:
    """The record's headers, or None when it has none, without making an empty Headers
    for a record built without them (what the runtime reads per record)."""
    return record.__dict__.get("headers")


@dataclasses.dataclass(frozen=True, kw_only=True, init=False)
class SourceRecord(ConnectRecord):
    """A record a source task read from an external system.

    ``source_partition`` identifies where in the source the record came from (a file, a
    table) and ``source_offset`` how far into it; the runtime stores the latest offset per
    partition once the record is written, and the task reads it back through
    ``OffsetStorageReader`` on restart. Both maps must be JSON-serializable: string
    keys, and str, int, float, bool or None values. ``kafka_partition`` None lets the
    partitioner choose from the serialized key.
    """

    source_partition: Mapping[str, Any] | None = None
    source_offset: Mapping[str, Any] | None = None

    __hash__ = None  # type: ignore[assignment]  # dataclass would add one per subclass

    def __init__(self, *, topic: str, kafka_partition: int | None = None,
                 key_schema: Schema | None = None, key: Any = None,
                 value_schema: Schema | None = None, value: Any = None,
                 timestamp: int | None = None,
                 headers: Headers | Iterable[Header] | None = None,
                 source_partition: Mapping[str, Any] | None = None,
                 source_offset: Mapping[str, Any] | None = None) -> None:
        fields = {
            "topic": topic if type(topic) is str else _topic(topic),
            "kafka_partition": kafka_partition,
            "key_schema": key_schema, "key": key, "value_schema": value_schema,
            "value": value, "timestamp": timestamp}
        # None, the common case, leaves them unset: reading ``headers`` then makes the
        # record's own empty Headers (``_LazyHeaders``).
        if headers is not None:
            fields["headers"] = headers if type(headers) is Headers else _headers(headers)
        fields["source_partition"] = source_partition
        fields["source_offset"] = source_offset
        object.__setattr__(self, "__dict__", fields)

    @staticmethod
    def many(values: Iterable[Any], source_offsets: Iterable[Mapping[str, Any] | None],
             *, topic: str, value_schema: Schema | None,
             source_partition: Mapping[str, Any] | None,
             kafka_partition: int | None = None) -> list[SourceRecord]:
        """One record per value, paired with ``source_offsets`` in order (equal lengths),
        all with the same topic, value schema, source partition and no key, timestamp
        or headers: what a source reading a batch of rows from one table builds.

        Equal to constructing each record with keywords, at half the cost: the
        keyword call per record was most of a record's price (``bench/jdbc_throughput.py``).
        """
        # Each record's dict is the template's keys updated in place, and its headers
        # are left to ``_LazyHeaders``: building a 10-key dict literal and a Headers per
        # record cost twice as much.
        template = _source_template(topic, kafka_partition, None, value_schema,
                                    source_partition)
        new = object.__new__
        out: list[SourceRecord] = []
        append = out.append
        for value, offset in zip(values, source_offsets, strict=True):
            record = new(SourceRecord)
            fields = record.__dict__
            fields.update(template)
            fields["value"] = value
            fields["source_offset"] = offset
            append(record)
        return out

    @staticmethod
    def maker(*, topic: str, key_schema: Schema | None, value_schema: Schema | None,
              source_partition: Mapping[str, Any] | None,
              kafka_partition: int | None = None
              ) -> Callable[[Any, Any, Mapping[str, Any] | None], SourceRecord]:
        """``make(key, value, source_offset)``: a record with that key, value and offset
        and the given topic, schemas and source partition, no timestamp or headers; what
        a source streaming changes of one table builds per change.

        Equal to constructing each record with keywords, at a third of the cost (a CDC
        change's record: 0.75 against 0.25 us, ``bench/postgres_cdc_stages.py``).
        """
        template = _source_template(topic, kafka_partition, key_schema, value_schema,
                                    source_partition)
        new = object.__new__

        def make(key: Any, value: Any, source_offset: Mapping[str, Any] | None
                 ) -> SourceRecord:
            record = new(SourceRecord)
            fields = record.__dict__
            fields.update(template)
            fields["key"] = key
            fields["value"] = value
            fields["source_offset"] = source_offset
            return record

        return make


@dataclasses.dataclass(frozen=True, kw_only=True, init=False)
class SinkRecord(ConnectRecord):
    """A record consumed from Kafka and delivered to a sink task.

    ``kafka_offset`` is its offset in the partition. ``original_topic``,
    ``original_kafka_partition`` and ``original_kafka_offset`` are where the record was
    consumed before any transformation renamed or moved it (KIP-793); they default to the
    record's own coordinates and survive ``new_record``, so a task reports offsets for
    ``pre_commit`` with ``TopicPartition(r.original_topic, r.original_kafka_partition)``.
    """

    # field() without a default: a bare annotation would inherit ConnectRecord's None.
    kafka_partition: int = dataclasses.field()
    kafka_offset: int
    timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE
    original_topic: str | None = None
    original_kafka_partition: int | None = None
    original_kafka_offset: int | None = None

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, *, topic: str, kafka_partition: int, kafka_offset: int,
                 key_schema: Schema | None = None, key: Any = None,
                 value_schema: Schema | None = None, value: Any = None,
                 timestamp: int | None = None,
                 headers: Headers | Iterable[Header] | None = None,
                 timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE,
                 original_topic: str | None = None,
                 original_kafka_partition: int | None = None,
                 original_kafka_offset: int | None = None) -> None:
        object.__setattr__(self, "__dict__", {
            "topic": topic if type(topic) is str else _topic(topic),
            "kafka_partition": kafka_partition,
            "key_schema": key_schema, "key": key, "value_schema": value_schema,
            "value": value, "timestamp": timestamp,
            "headers": headers if type(headers) is Headers else _headers(headers),
            "kafka_offset": kafka_offset, "timestamp_type": timestamp_type,
            "original_topic": topic if original_topic is None else original_topic,
            "original_kafka_partition": kafka_partition if original_kafka_partition is None
            else original_kafka_partition,
            "original_kafka_offset": kafka_offset if original_kafka_offset is None
            else original_kafka_offset})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.original_topic is None:
            object.__setattr__(self, "original_topic", self.topic)
        if self.original_kafka_partition is None:
            object.__setattr__(self, "original_kafka_partition", self.kafka_partition)
        if self.original_kafka_offset is None:
            object.__setattr__(self, "original_kafka_offset", self.kafka_offset)


def _source_template(topic: str, kafka_partition: int | None, key_schema: Schema | None,
                     value_schema: Schema | None,
                     source_partition: Mapping[str, Any] | None) -> dict[str, Any]:
    """A source record's instance dict, in field order, with no key, value, timestamp or
    offset and no headers (``_LazyHeaders`` makes them): what ``SourceRecord.many`` and
    ``SourceRecord.maker`` copy into each record they build."""
    return {"topic": topic if type(topic) is str else _topic(topic),
            "kafka_partition": kafka_partition, "key_schema": key_schema, "key": None,
            "value_schema": value_schema, "value": None, "timestamp": None,
            "source_partition": source_partition, "source_offset": None}


def _topic(topic: Any) -> str:
    if type(topic) is not str and not isinstance(topic, str):
        raise DataError(f"A record's topic is a str, not {type(topic).__name__}")
    return topic  # type: ignore[no-any-return]


def _headers(headers: Headers | Iterable[Header] | None) -> Headers:
    if isinstance(headers, Headers):
        return headers
    return Headers(headers or ())
