"""The S3 sink's declared config keys (Confluent's names and defaults), parsed once into a
frozen ``S3SinkSettings``."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Mapping
from functools import cache
from typing import Any

from connect.api import (
    NO_DEFAULT,
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    NonEmptyString,
    Password,
    Range,
    ValidString,
)

__all__ = ["CONFIG_DEF", "S3SinkSettings", "plugin_version", "short_class_name"]

MIB = 1024 * 1024

BUCKET = "s3.bucket.name"
REGION = "s3.region"
STORE_URL = "store.url"
PATH_STYLE = "s3.path.style.access.enabled"
ACCESS_KEY_ID = "aws.access.key.id"
SECRET_ACCESS_KEY = "aws.secret.access.key"
TOPICS_DIR = "topics.dir"
DIRECTORY_DELIM = "directory.delim"
FILE_DELIM = "file.delim"
FLUSH_SIZE = "flush.size"
ROTATE_INTERVAL_MS = "rotate.interval.ms"
ROTATE_SCHEDULE_INTERVAL_MS = "rotate.schedule.interval.ms"
TIMEZONE = "timezone"
LOCALE = "locale"
STORAGE_CLASS = "storage.class"
FORMAT_CLASS = "format.class"
PARTITIONER_CLASS = "partitioner.class"
PATH_FORMAT = "path.format"
PARTITION_DURATION_MS = "partition.duration.ms"
PARTITION_FIELD_NAME = "partition.field.name"
TIMESTAMP_EXTRACTOR = "timestamp.extractor"
TIMESTAMP_FIELD = "timestamp.field"
PART_SIZE = "s3.part.size"
COMPRESSION_TYPE = "s3.compression.type"
COMPRESSION_LEVEL = "s3.compression.level"
NULL_VALUES = "behavior.on.null.values"
SCHEMA_COMPATIBILITY = "schema.compatibility"
S3_RETRY_BACKOFF_MS = "s3.retry.backoff.ms"
PART_RETRIES = "s3.part.retries"
RETRY_BACKOFF_MS = "retry.backoff.ms"
CONNECT_TIMEOUT_MS = "s3.connect.timeout.ms"
READ_TIMEOUT_MS = "s3.read.timeout.ms"
ZERO_PAD_WIDTH = "filename.offset.zero.pad.width"
BYTEARRAY_EXTENSION = "format.bytearray.extension"
BYTEARRAY_SEPARATOR = "format.bytearray.separator"
AVRO_CODEC = "avro.codec"
PARQUET_CODEC = "parquet.codec"
RECOVERY_FROM_STORAGE = "offsets.recovery.from.storage"
STORE_KEYS = "store.kafka.keys"
STORE_HEADERS = "store.kafka.headers"

#: The formats, by the short name ``format.class`` may also use.
FORMATS = ("JsonFormat", "AvroFormat", "ParquetFormat", "ByteArrayFormat")
#: The built-in partitioners, by short name.
PARTITIONERS = ("DefaultPartitioner", "FieldPartitioner", "TimeBasedPartitioner",
                "HourlyPartitioner", "DailyPartitioner")
EXTRACTORS = ("Wallclock", "Record", "RecordField")


def short_class_name(name: str) -> str:
    """``io.confluent.connect.storage.partitioner.FieldPartitioner`` -> ``FieldPartitioner``;
    Confluent's nested extractor names (``...TimeBasedPartitioner$Record``) too."""
    return name.rsplit("$", 1)[-1].rsplit(".", 1)[-1]


def _class_in(*allowed: str) -> Any:
    class _Known:
        def ensure_valid(self, name: str, value: Any) -> None:
            if value is not None and short_class_name(value) not in allowed:
                raise ConfigError(name, f"Invalid value {value} for configuration {name}: "
                                  f"must be one of {', '.join(allowed)} (short or Confluent "
                                  "class name)")

        def __str__(self) -> str:
            return ", ".join(allowed)
    return _Known()


def _unsupported_true(key: str) -> Any:
    class _NotTrue:
        def ensure_valid(self, name: str, value: Any) -> None:
            if value is True:
                raise ConfigError(name, f"{key}=true (sidecar key/header files) is not "
                                  "supported by Ferry's S3 sink")

        def __str__(self) -> str:
            return "false"
    return _NotTrue()


def _define(d: ConfigDef, name: str, type_: ConfigType, default: Any, doc: str,
            validator: Any = None, importance: Importance = Importance.MEDIUM) -> None:
    d.define(name, type_, default=default, validator=validator, importance=importance,
             documentation=doc)


def _build() -> ConfigDef:
    d = ConfigDef()
    _define(d, BUCKET, ConfigType.STRING, NO_DEFAULT, "The S3 bucket the connector writes to.",
            NonEmptyString(), Importance.HIGH)
    _define(d, REGION, ConfigType.STRING, "us-west-2", "The AWS region of the bucket.")
    _define(d, STORE_URL, ConfigType.STRING, None, "Endpoint of an S3-compatible store "
            "(MinIO, moto ...); https:// is prepended when no scheme is given.")
    _define(d, PATH_STYLE, ConfigType.BOOLEAN, True, "Path-style bucket addressing.")
    _define(d, ACCESS_KEY_ID, ConfigType.STRING, "", "AWS access key id; empty: the "
            "default credential chain (environment, profile, instance role).")
    _define(d, SECRET_ACCESS_KEY, ConfigType.PASSWORD, "", "AWS secret access key.")
    _define(d, TOPICS_DIR, ConfigType.STRING, "topics", "Top-level directory of the "
            "objects.")
    _define(d, DIRECTORY_DELIM, ConfigType.STRING, "/", "Directory delimiter.")
    _define(d, FILE_DELIM, ConfigType.STRING, "+", "Delimiter in object names.")
    _define(d, FLUSH_SIZE, ConfigType.INT, NO_DEFAULT, "Records per object before it is "
            "committed.", Range.at_least(1), Importance.HIGH)
    _define(d, ROTATE_INTERVAL_MS, ConfigType.LONG, -1, "Rotate when the timestamp "
            "extractor's time of a record is this far from the file's first (exactly-once "
            "with Record/RecordField); -1 disables.")
    _define(d, ROTATE_SCHEDULE_INTERVAL_MS, ConfigType.LONG, -1, "Rotate on the wall clock "
            "every interval, aligned to midnight in timezone, even without new data. Not "
            "exactly-once. -1 disables.")
    _define(d, TIMEZONE, ConfigType.STRING, "", "Timezone of time-based partitioners and of "
            "scheduled rotation (e.g. UTC, America/Los_Angeles).")
    _define(d, LOCALE, ConfigType.STRING, "", "Locale of time-based partitioners' path "
            "format (month and day names are written in English).")
    _define(d, STORAGE_CLASS, ConfigType.STRING, "io.confluent.connect.s3.storage.S3Storage",
            "The storage backend.", _class_in("S3Storage"))
    _define(d, FORMAT_CLASS, ConfigType.STRING, NO_DEFAULT, "Object format: JsonFormat, "
            "AvroFormat, ParquetFormat or ByteArrayFormat.", _class_in(*FORMATS),
            Importance.HIGH)
    _define(d, PARTITIONER_CLASS, ConfigType.STRING,
            "io.confluent.connect.storage.partitioner.DefaultPartitioner",
            "Partitioner: a built-in one or a name in the ferry.s3.partitioners group.")
    _define(d, PATH_FORMAT, ConfigType.STRING, "", "Joda-style pattern of time-based "
            "directories, e.g. 'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH.")
    _define(d, PARTITION_DURATION_MS, ConfigType.LONG, -1, "Width of a time-based "
            "partition.")
    _define(d, PARTITION_FIELD_NAME, ConfigType.LIST, "", "Value fields of the "
            "FieldPartitioner.")
    _define(d, TIMESTAMP_EXTRACTOR, ConfigType.STRING, "Wallclock", "Record time source: "
            "Wallclock, Record or RecordField.", _class_in(*EXTRACTORS))
    _define(d, TIMESTAMP_FIELD, ConfigType.STRING, "timestamp", "Value field of the "
            "RecordField extractor (dots reach nested fields).")
    _define(d, PART_SIZE, ConfigType.INT, 25 * MIB, "Multipart upload part size; memory per "
            "open object.", Range.between(5 * MIB, 2**31 - 1))
    _define(d, COMPRESSION_TYPE, ConfigType.STRING, "none", "Object compression of JSON and "
            "ByteArray formats.", ValidString.in_("none", "gzip"))
    _define(d, COMPRESSION_LEVEL, ConfigType.INT, -1, "gzip level, -1 for the default.",
            Range.between(-1, 9))
    _define(d, NULL_VALUES, ConfigType.STRING, "fail", "Records with null values: fail, "
            "ignore or write.", CaseInsensitiveValidString.in_("fail", "ignore", "write"))
    _define(d, SCHEMA_COMPATIBILITY, ConfigType.STRING, "NONE", "When a value schema change "
            "rotates the object.", CaseInsensitiveValidString.in_(
                "NONE", "BACKWARD", "FORWARD", "FULL"))
    _define(d, S3_RETRY_BACKOFF_MS, ConfigType.LONG, 200, "First backoff between S3 request "
            "retries; doubles per attempt.", Range.at_least(0))
    _define(d, PART_RETRIES, ConfigType.INT, 3, "Retries of one S3 request on 5xx, "
            "throttling and timeouts.", Range.at_least(0))
    _define(d, RETRY_BACKOFF_MS, ConfigType.LONG, 5000, "Wait after an S3 request failed "
            "all its retries before the writer tries again.", Range.at_least(0))
    # Ferry's own keys: Confluent's connector has none and runs with the AWS SDK for Java's
    # defaults (10 s to connect, 50 s socket timeout), which these defaults keep.
    _define(d, CONNECT_TIMEOUT_MS, ConfigType.INT, 10_000, "Timeout of opening a connection "
            "to S3; a timeout is retried like a 5xx answer.", Range.at_least(1))
    _define(d, READ_TIMEOUT_MS, ConfigType.INT, 50_000, "Longest wait for S3 to answer (or "
            "to send more of its answer); a timeout is retried like a 5xx answer.",
            Range.at_least(1))
    _define(d, ZERO_PAD_WIDTH, ConfigType.INT, 10, "Width of the zero-padded start offset "
            "in object names.", Range.at_least(0))
    _define(d, BYTEARRAY_EXTENSION, ConfigType.STRING, ".bin", "ByteArrayFormat's object "
            "extension.")
    _define(d, BYTEARRAY_SEPARATOR, ConfigType.STRING, None, "ByteArrayFormat's record "
            "separator; a newline when unset.")
    _define(d, AVRO_CODEC, ConfigType.STRING, "null", "Avro block codec.",
            ValidString.in_("null", "deflate", "snappy"))
    _define(d, PARQUET_CODEC, ConfigType.STRING, "snappy", "Parquet compression.",
            ValidString.in_("none", "snappy", "gzip", "zstd", "lz4"))
    for key in (STORE_KEYS, STORE_HEADERS):
        _define(d, key, ConfigType.BOOLEAN, False, "Sidecar files of keys or headers: not "
                "supported by Ferry's S3 sink; true is refused rather than ignored.",
                _unsupported_true(key))
    _define(d, RECOVERY_FROM_STORAGE, ConfigType.BOOLEAN, False, "On partition assignment, "
            "resume from the last object batch in the bucket (for consumer groups whose "
            "offsets were lost).")
    return d


CONFIG_DEF = _build()


@dataclasses.dataclass(frozen=True)
class S3SinkSettings:
    """Every key of ``CONFIG_DEF``, typed; the original props are kept for partitioners."""

    bucket: str
    region: str
    store_url: str | None
    path_style: bool
    access_key_id: str
    secret_access_key: Password
    topics_dir: str
    directory_delim: str
    file_delim: str
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_interval_ms: int
    timezone: str
    locale: str
    format: str
    partitioner: str
    path_format: str
    partition_duration_ms: int
    partition_fields: tuple[str, ...]
    timestamp_extractor: str
    timestamp_field: str
    part_size: int
    compression: str
    compression_level: int
    null_values: str
    schema_compatibility: str
    s3_retry_backoff_ms: int
    part_retries: int
    retry_backoff_ms: int
    connect_timeout_ms: int
    read_timeout_ms: int
    zero_pad_width: int
    bytearray_extension: str
    bytearray_separator: bytes
    avro_codec: str
    parquet_codec: str
    recovery_from_storage: bool
    originals: Mapping[str, str]

    @classmethod
    def parse(cls, props: Mapping[str, str]) -> S3SinkSettings:
        """Parse and check ``props``; raises ``ConfigError`` naming the key."""
        c = AbstractConfig(CONFIG_DEF, props)
        sep = c.get_string(BYTEARRAY_SEPARATOR)
        settings = cls(
            bucket=c.get_string(BUCKET) or "", region=c.get_string(REGION) or "us-west-2",
            store_url=c.get_string(STORE_URL) or None, path_style=bool(c.get_boolean(PATH_STYLE)),
            access_key_id=c.get_string(ACCESS_KEY_ID) or "",
            secret_access_key=c.get_password(SECRET_ACCESS_KEY) or Password(""),
            topics_dir=c.get_string(TOPICS_DIR) or "", directory_delim=c.get_string(
                DIRECTORY_DELIM) or "/", file_delim=c.get_string(FILE_DELIM) or "+",
            flush_size=int(c.get_int(FLUSH_SIZE) or 0),
            rotate_interval_ms=int(c.get_int(ROTATE_INTERVAL_MS) or -1),
            rotate_schedule_interval_ms=int(c.get_int(ROTATE_SCHEDULE_INTERVAL_MS) or -1),
            timezone=c.get_string(TIMEZONE) or "", locale=c.get_string(LOCALE) or "",
            format=short_class_name(c.get_string(FORMAT_CLASS) or ""),
            partitioner=c.get_string(PARTITIONER_CLASS) or "DefaultPartitioner",
            path_format=c.get_string(PATH_FORMAT) or "",
            partition_duration_ms=int(c.get_int(PARTITION_DURATION_MS) or -1),
            partition_fields=tuple(f.strip() for f in c.get_list(PARTITION_FIELD_NAME) or []
                                   if f.strip()),
            timestamp_extractor=short_class_name(c.get_string(TIMESTAMP_EXTRACTOR) or ""),
            timestamp_field=c.get_string(TIMESTAMP_FIELD) or "timestamp",
            part_size=int(c.get_int(PART_SIZE) or 25 * MIB),
            compression=c.get_string(COMPRESSION_TYPE) or "none",
            compression_level=int(c.get_int(COMPRESSION_LEVEL) or -1),
            null_values=(c.get_string(NULL_VALUES) or "fail").lower(),
            schema_compatibility=(c.get_string(SCHEMA_COMPATIBILITY) or "NONE").upper(),
            s3_retry_backoff_ms=int(c.get_int(S3_RETRY_BACKOFF_MS) or 0),
            part_retries=int(c.get_int(PART_RETRIES) or 0),
            retry_backoff_ms=int(c.get_int(RETRY_BACKOFF_MS) or 0),
            connect_timeout_ms=int(c.get_int(CONNECT_TIMEOUT_MS) or 10_000),
            read_timeout_ms=int(c.get_int(READ_TIMEOUT_MS) or 50_000),
            zero_pad_width=int(c.get_int(ZERO_PAD_WIDTH) or 0),
            bytearray_extension=c.get_string(BYTEARRAY_EXTENSION) or "",
            bytearray_separator=b"\n" if sep is None else sep.encode(),
            avro_codec=c.get_string(AVRO_CODEC) or "null",
            parquet_codec=c.get_string(PARQUET_CODEC) or "snappy",
            recovery_from_storage=bool(c.get_boolean(RECOVERY_FROM_STORAGE)),
            originals=dict(props),
        )
        settings._check()
        return settings

    def _check(self) -> None:
        if self.compression == "gzip" and self.format in ("AvroFormat", "ParquetFormat"):
            raise ConfigError(COMPRESSION_TYPE, f"{COMPRESSION_TYPE}=gzip applies to JsonFormat "
                              f"and ByteArrayFormat; {self.format} compresses with "
                              f"{AVRO_CODEC if self.format == 'AvroFormat' else PARQUET_CODEC}")
        if self.null_values == "write" and self.format in ("AvroFormat", "ParquetFormat"):
            raise ConfigError(NULL_VALUES, f"{NULL_VALUES}=write needs JsonFormat or "
                              f"ByteArrayFormat; {self.format} has no null record")
        if self.rotate_schedule_interval_ms > 0 and not self.timezone:
            raise ConfigError(TIMEZONE, f"{ROTATE_SCHEDULE_INTERVAL_MS} needs {TIMEZONE}")
        if self.timestamp_extractor == "RecordField" and not self.timestamp_field:
            raise ConfigError(TIMESTAMP_FIELD, "the RecordField extractor needs a field")


@cache
def plugin_version() -> str:
    """The Ferry distribution's version, which the connector reports."""
    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
