"""Partitioners: the directory (encoded partition) a record's object goes to, as
Confluent's storage-common partitioners name it, and the timestamp extractors of the
time-based ones. Third-party partitioners register under the entry-point group
``ferry.s3.partitioners`` as subclasses of ``Partitioner``."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import logging
import time
import zoneinfo
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from connect.api import ConfigError, DataError, SinkRecord, Struct, Type
from connectors.s3 import config as c
from connectors.s3.config import S3SinkSettings, short_class_name
from connectors.s3.joda import JodaFormat

__all__ = ["ENTRY_POINT_GROUP", "Partitioner", "TimestampExtractor", "load_partitioner"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ferry.s3.partitioners"
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

TimestampExtractor = Callable[[SinkRecord], int]


class Partitioner(ABC):
    """Maps a record to its encoded partition. ``configure()`` is called once with the
    connector's settings (``settings.originals`` holds every key, custom ones too).
    ``timestamp_extractor`` is set by time-based partitioners; ``rotate.interval.ms``
    applies only when it is (as in Confluent)."""

    timestamp_extractor: TimestampExtractor | None = None

    def configure(self, settings: S3SinkSettings) -> None:
        self.delim = settings.directory_delim

    @abstractmethod
    def encode_partition(self, record: SinkRecord) -> str:
        """The encoded partition, e.g. ``partition=3``; raise ``DataError`` if the record
        cannot be partitioned."""

    def generate_partitioned_path(self, topic: str, encoded_partition: str) -> str:
        """The directory under ``topics.dir``: ``<topic><delim><encoded partition>``."""
        return f"{topic}{self.delim}{encoded_partition}"


class DefaultPartitioner(Partitioner):
    def encode_partition(self, record: SinkRecord) -> str:
        return f"partition={record.kafka_partition}"


class FieldPartitioner(Partitioner):
    """``<field>=<value>`` per field of ``partition.field.name``, joined by the delimiter;
    values of integer, string and boolean fields only, as Confluent's."""

    def configure(self, settings: S3SinkSettings) -> None:
        super().configure(settings)
        if not settings.partition_fields:
            raise ConfigError(c.PARTITION_FIELD_NAME, "FieldPartitioner needs at least one "
                              f"field in {c.PARTITION_FIELD_NAME}")
        self.fields = settings.partition_fields

    def encode_partition(self, record: SinkRecord) -> str:
        return self.delim.join(f"{f}={self._value(record, f)}" for f in self.fields)

    @staticmethod
    def _value(record: SinkRecord, field: str) -> str:
        value = record.value
        if isinstance(value, Struct):
            f = value.schema.field(field)
            if f is None:
                raise DataError(f"FieldPartitioner: the value has no field '{field}'")
            v = value.get(f)
            if f.schema.type not in (Type.INT8, Type.INT16, Type.INT32, Type.INT64,
                                     Type.STRING, Type.BOOLEAN):
                raise DataError(f"FieldPartitioner: field '{field}' is "
                                f"{f.schema.type.value}; only integer, string and boolean "
                                "fields partition")
        elif isinstance(value, Mapping):
            if field not in value:
                raise DataError(f"FieldPartitioner: the value has no field '{field}'")
            v = value[field]
            if not isinstance(v, (int, str, bool)):
                raise DataError(f"FieldPartitioner: field '{field}' is a "
                                f"{type(v).__name__}; only integer, string and boolean "
                                "fields partition")
        else:
            raise DataError("FieldPartitioner needs struct or map values, not "
                            f"{type(value).__name__}")
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)


class TimeBasedPartitioner(Partitioner):
    """``path.format`` rendered at the start of the record's time bucket
    (``partition.duration.ms`` wide, aligned in ``timezone``)."""

    duration_ms: int = -1
    path_format: str = ""

    def configure(self, settings: S3SinkSettings) -> None:
        super().configure(settings)
        duration = self.duration_ms if self.duration_ms > 0 else settings.partition_duration_ms
        pattern = self.path_format or settings.path_format
        if duration <= 0:
            raise ConfigError(c.PARTITION_DURATION_MS, f"{c.PARTITION_DURATION_MS} must be "
                              "positive for time-based partitioners")
        if not pattern:
            raise ConfigError(c.PATH_FORMAT, f"{c.PATH_FORMAT} cannot be empty")
        if not settings.locale:
            raise ConfigError(c.LOCALE, "Locale cannot be empty.")
        if not settings.timezone:
            raise ConfigError(c.TIMEZONE, "Timezone cannot be empty.")
        if pattern.endswith(self.delim):
            pattern = pattern[: -len(self.delim)]
        self.duration = duration
        self.zone = timezone(settings.timezone)
        self.formatter = JodaFormat(pattern)
        self.timestamp_extractor = extractor(settings)

    def encode_partition(self, record: SinkRecord) -> str:
        assert self.timestamp_extractor is not None
        return self.encode_timestamp(self.timestamp_extractor(record))

    def encode_timestamp(self, timestamp_ms: int) -> str:
        local = dt.datetime.fromtimestamp(timestamp_ms / 1000, self.zone)
        offset_ms = int(local.utcoffset().total_seconds() * 1000)  # type: ignore[union-attr]
        adjusted = timestamp_ms + offset_ms
        start = adjusted - adjusted % self.duration  # floor in local time, as Confluent
        naive = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=start)
        return self.formatter.format(naive.replace(tzinfo=self.zone))


class HourlyPartitioner(TimeBasedPartitioner):
    duration_ms = HOUR_MS

    def configure(self, settings: S3SinkSettings) -> None:
        d = settings.directory_delim
        self.path_format = f"'year'=YYYY{d}'month'=MM{d}'day'=dd{d}'hour'=HH"
        super().configure(settings)


class DailyPartitioner(TimeBasedPartitioner):
    duration_ms = DAY_MS

    def configure(self, settings: S3SinkSettings) -> None:
        d = settings.directory_delim
        self.path_format = f"'year'=YYYY{d}'month'=MM{d}'day'=dd"
        super().configure(settings)


def timezone(name: str) -> dt.tzinfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(c.TIMEZONE, f"unknown timezone '{name}'") from exc


def extractor(settings: S3SinkSettings) -> TimestampExtractor:
    """The ``timestamp.extractor``: Wallclock, Record or RecordField."""
    name = settings.timestamp_extractor
    if name == "Wallclock":
        return lambda _r: int(time.time() * 1000)
    if name == "Record":
        return _record_time
    path = settings.timestamp_field.split(".")
    return lambda r: _field_time(r, path)


def _record_time(record: SinkRecord) -> int:
    if record.timestamp is None:
        raise DataError("the record has no timestamp (timestamp.extractor=Record)")
    return record.timestamp


def _field_time(record: SinkRecord, path: list[str]) -> int:
    value: Any = record.value
    for name in path:
        if isinstance(value, Struct):
            value = value.get(name) if value.schema.field(name) else None
        elif isinstance(value, Mapping):
            value = value.get(name)
        else:
            value = None
        if value is None:
            raise DataError(f"the value has no timestamp field '{'.'.join(path)}'")
    if isinstance(value, bool):
        raise DataError(f"timestamp field '{'.'.join(path)}' is a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        when = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return int(when.timestamp() * 1000)
    if isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise DataError(f"timestamp field '{'.'.join(path)}' is not ISO-8601: "
                            f"{value!r}") from exc
        return int((when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp() * 1000)
    raise DataError(f"timestamp field '{'.'.join(path)}' is a {type(value).__name__}")


_BUILT_IN: dict[str, type[Partitioner]] = {
    "DefaultPartitioner": DefaultPartitioner, "FieldPartitioner": FieldPartitioner,
    "TimeBasedPartitioner": TimeBasedPartitioner, "HourlyPartitioner": HourlyPartitioner,
    "DailyPartitioner": DailyPartitioner,
}


def load_partitioner(settings: S3SinkSettings) -> Partitioner:
    """The configured partitioner, configured: a built-in one by short or Confluent class
    name, else an entry point of ``ferry.s3.partitioners`` by name."""
    name = settings.partitioner
    cls: Any = _BUILT_IN.get(short_class_name(name))
    if cls is None:
        found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name)
        if not found:
            raise ConfigError(c.PARTITIONER_CLASS, f"unknown partitioner '{name}': not one of "
                              f"{', '.join(_BUILT_IN)} nor an entry point of "
                              f"{ENTRY_POINT_GROUP}")
        cls = next(iter(found)).load()
        if not (isinstance(cls, type) and issubclass(cls, Partitioner)):
            raise ConfigError(c.PARTITIONER_CLASS, f"entry point '{name}' of "
                              f"{ENTRY_POINT_GROUP} is not a Partitioner subclass")
    partitioner = cls()
    partitioner.configure(settings)
    return partitioner
