"""Per-topic configuration: Kafka's topic config names, types, defaults and validation.

Each key is declared once in ``TOPIC_CONFIGS``. Raw ``str`` values (from the CLI, a
CreateTopics request or a properties file) are parsed once into a frozen ``TopicConfig``;
engines only ever see the typed object. Broker-level defaults use Kafka's broker names
(``log.retention.ms`` ...) and map onto the topic keys through ``BROKER_DEFAULT_NAMES``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from core.log.errors import InvalidConfigError

__all__ = [
    "BROKER_DEFAULT_NAMES",
    "DEPRECATED_IGNORED",
    "TOPIC_CONFIGS",
    "ConfigKey",
    "TopicConfig",
    "parse_topic_configs",
]

log = logging.getLogger(__name__)

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One declared config key: Kafka name, type, default, validator and documentation."""

    name: str
    type: str  # "long", "int", "double", "boolean", "string", "list"
    default: Any
    doc: str
    validator: Callable[[Any], str | None] | None = None  # returns an error text or None
    attribute: str = ""  # field name on TopicConfig

    def parse(self, raw: object) -> Any:
        """Parse ``raw`` (a str, or an already typed value) and validate it."""
        try:
            value = _PARSERS[self.type](raw)
        except (TypeError, ValueError):
            raise InvalidConfigError(
                f"Invalid value {raw!r} for configuration {self.name}: expected a {self.type}",
                key=self.name,
            ) from None
        if self.validator is not None:
            problem = self.validator(value)
            if problem:
                raise InvalidConfigError(
                    f"Invalid value {raw!r} for configuration {self.name}: {problem}",
                    key=self.name,
                )
        return value

    def render(self, value: Any) -> str:
        """Kafka's string form of a typed value (as DescribeConfigs shows it)."""
        if self.type == "boolean":
            return "true" if value else "false"
        if self.type == "list":
            return ",".join(value)
        return str(value)


def _parse_bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError(raw)


def _parse_int(raw: object) -> int:
    if isinstance(raw, bool):
        raise ValueError(raw)
    if isinstance(raw, int):
        return raw
    return int(str(raw).strip())


def _parse_list(raw: object) -> tuple[str, ...]:
    if isinstance(raw, (list, tuple)):
        items = [str(x).strip() for x in raw]
    else:
        items = [x.strip() for x in str(raw).split(",")]
    return tuple(x for x in items if x)


_PARSERS: dict[str, Callable[[object], Any]] = {
    "long": _parse_int,
    "int": _parse_int,
    "double": lambda raw: float(str(raw).strip()) if not isinstance(raw, float) else raw,
    "boolean": _parse_bool,
    "string": lambda raw: str(raw).strip(),
    "list": _parse_list,
}


def at_least(lower: float, upper: float | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value < lower:
            return f"Value must be at least {lower}"
        if upper is not None and value > upper:
            return f"Value must be no more than {upper}"
        return None

    return check


def one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if item not in choices:
                return f"String must be one of: {', '.join(choices)}"
        if isinstance(value, tuple) and not value:
            return "the list must not be empty"
        return None

    return check


def _metadata_version(value: Any) -> str | None:
    # Kafka's MetadataVersionValidator: a release ("2.8", "0.10.2") or an inter-broker
    # protocol version ("3.0-IV1").
    if not re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?(-IV[0-9]+)?", value):
        return "expected a Kafka version such as 2.8 or 3.0-IV1"
    return None


#: Deprecated topic configs that Kafka 3.x still accepts and validates but ignores (its
#: inter-broker protocol is 3.0 or later, so records are always stored in format v2),
#: logging a warning; Kafka 4.0 removed them. Ferry does the same, so topic definitions
#: written for Kafka 3.x keep working.
DEPRECATED_IGNORED = frozenset({"message.format.version", "message.downconversion.enable",
                                "message.timestamp.difference.max.ms"})

_K = ConfigKey
TOPIC_CONFIGS: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        _K("cleanup.policy", "list", ("delete",),
           "delete: drop whole segments past retention; compact: keep the latest record per key.",
           one_of("delete", "compact"), "cleanup_policy"),
        _K("retention.ms", "long", 604800000,
           "Delete a segment once its newest record is older than this; -1 keeps forever.",
           at_least(-1), "retention_ms"),
        _K("retention.bytes", "long", -1,
           "Delete oldest segments while the partition is larger than this; -1 is no limit.",
           at_least(-1), "retention_bytes"),
        _K("segment.bytes", "int", 1073741824,
           "Roll to a new segment when the active one reaches this size.",
           at_least(14), "segment_bytes"),
        _K("segment.ms", "long", 604800000,
           "Roll to a new segment when the active one's first record is this old.",
           at_least(1), "segment_ms"),
        _K("segment.jitter.ms", "long", 0, "Random jitter subtracted from segment.ms.",
           at_least(0), "segment_jitter_ms"),
        _K("segment.index.bytes", "int", 10485760, "Maximum size of a segment's offset index.",
           at_least(8), "segment_index_bytes"),
        _K("index.interval.bytes", "int", 4096,
           "Add an offset-index and time-index entry every this many bytes of log.",
           at_least(0), "index_interval_bytes"),
        _K("flush.messages", "long", LONG_MAX,
           "fsync the log after this many records; 1 fsyncs every append.",
           at_least(1), "flush_messages"),
        _K("flush.ms", "long", LONG_MAX,
           "fsync the log when the oldest unflushed record is this old.",
           at_least(0), "flush_ms"),
        _K("delete.retention.ms", "long", 86400000,
           "How long a tombstone survives compaction, so that consumers can see it.",
           at_least(0), "delete_retention_ms"),
        _K("min.compaction.lag.ms", "long", 0,
           "A record stays uncompacted at least this long after it was written.",
           at_least(0), "min_compaction_lag_ms"),
        _K("max.compaction.lag.ms", "long", LONG_MAX,
           "A record becomes eligible for compaction at most this long after it was written.",
           at_least(1), "max_compaction_lag_ms"),
        _K("min.cleanable.dirty.ratio", "double", 0.5,
           "Compact when the uncompacted share of the log exceeds this ratio.",
           at_least(0.0, 1.0), "min_cleanable_dirty_ratio"),
        _K("max.message.bytes", "int", 1048588,
           "Largest record batch the topic accepts.", at_least(0), "max_message_bytes"),
        _K("message.timestamp.type", "string", "CreateTime",
           "CreateTime keeps the producer's timestamps; LogAppendTime stamps append time.",
           one_of("CreateTime", "LogAppendTime"), "message_timestamp_type"),
        _K("compression.type", "string", "producer",
           "Stored compression; producer keeps what the producer sent.",
           one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
           "compression_type"),
        _K("min.insync.replicas", "int", 1,
           "Replicas that must acknowledge an acks=all produce.", at_least(1),
           "min_insync_replicas"),
        _K("file.delete.delay.ms", "long", 60000,
           "Wait this long before removing a deleted segment's files.", at_least(0),
           "file_delete_delay_ms"),
        _K("preallocate", "boolean", False, "Preallocate segment files (accepted, unused).",
           None, "preallocate"),
        _K("unclean.leader.election.enable", "boolean", False,
           "Allow an out-of-sync replica to become leader.", None,
           "unclean_leader_election_enable"),
        _K("message.timestamp.before.max.ms", "long", LONG_MAX,
           "Reject records whose timestamp is further than this in the past.", at_least(0),
           "message_timestamp_before_max_ms"),
        _K("message.timestamp.after.max.ms", "long", LONG_MAX,
           "Reject records whose timestamp is further than this in the future.", at_least(0),
           "message_timestamp_after_max_ms"),
        _K("message.format.version", "string", "3.0-IV1",
           "Deprecated, ignored: records are always stored as RecordBatch v2.",
           _metadata_version, "message_format_version"),
        _K("message.downconversion.enable", "boolean", True,
           "Deprecated, ignored: fetches are never down-converted to older formats.", None,
           "message_downconversion_enable"),
        _K("message.timestamp.difference.max.ms", "long", LONG_MAX,
           "Deprecated, ignored: use message.timestamp.before.max.ms and "
           "message.timestamp.after.max.ms.", at_least(0),
           "message_timestamp_difference_max_ms"),
        _K("ferry.acks.all.fsync", "boolean", True,
           "Ferry only: an acks=all produce is answered once an fsync covers its batch "
           "(group commit), so no acknowledged record is lost in a power cut.", None,
           "acks_all_fsync"),
        _K("ferry.page.cache.window.bytes", "long", 1073741824,
           "Ferry only: as a partition grows, its written data more than this many bytes "
           "behind the end is written back and dropped from the OS page cache, so that a "
           "long stream of appends reuses memory instead of filling the cache; -1 leaves "
           "the page cache to the kernel, as Kafka does.", at_least(-1),
           "page_cache_window_bytes"),
    )
}

#: Broker (server.properties) names for topic defaults, as Kafka spells them.
BROKER_DEFAULT_NAMES: dict[str, str] = {
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "message.max.bytes": "max.message.bytes",
    "log.message.timestamp.type": "message.timestamp.type",
    "compression.type": "compression.type",
    "min.insync.replicas": "min.insync.replicas",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.preallocate": "preallocate",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "log.message.format.version": "message.format.version",
    "log.message.downconversion.enable": "message.downconversion.enable",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "ferry.acks.all.fsync": "ferry.acks.all.fsync",
    "ferry.page.cache.window.bytes": "ferry.page.cache.window.bytes",
}


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """Typed, validated per-topic configuration. Defaults are Kafka's."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    retention_ms: int = 604800000
    retention_bytes: int = -1
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    file_delete_delay_ms: int = 60000
    preallocate: bool = False
    unclean_leader_election_enable: bool = False
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    message_format_version: str = "3.0-IV1"
    message_downconversion_enable: bool = True
    message_timestamp_difference_max_ms: int = LONG_MAX
    acks_all_fsync: bool = True
    page_cache_window_bytes: int = 1073741824

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def with_overrides(self, overrides: Mapping[str, object]) -> TopicConfig:
        """A copy with Kafka-named ``overrides`` parsed and applied (InvalidConfigError if bad)."""
        changes = {}
        for name, raw in overrides.items():
            key = TOPIC_CONFIGS.get(name)
            if key is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}", key=name)
            changes[key.attribute] = key.parse(raw)
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return TopicConfig(**values)

    def to_kafka(self) -> dict[str, str]:
        """Every key by its Kafka name with Kafka's string rendering."""
        return {k.name: k.render(getattr(self, k.attribute)) for k in TOPIC_CONFIGS.values()}


def parse_topic_configs(overrides: Mapping[str, object]) -> dict[str, str]:
    """Validate Kafka-named overrides; return them normalised to Kafka's string form."""
    out = {}
    for name, raw in overrides.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise InvalidConfigError(f"Unknown topic config name: {name}", key=name)
        out[name] = key.render(key.parse(raw))
        if name in DEPRECATED_IGNORED:
            log.warning("topic config %s=%s is deprecated and ignored, as Kafka 3.x ignores "
                        "it", name, out[name])
    return out


def broker_defaults(broker_config: Mapping[str, object]) -> TopicConfig:
    """Topic defaults from broker-level names (``log.retention.ms`` ...); other keys ignored.

    ``log.retention.hours``/``minutes`` are honoured as Kafka does when ``.ms`` is absent.
    """
    overrides: dict[str, object] = {}
    for broker_name, topic_name in BROKER_DEFAULT_NAMES.items():
        if broker_name in broker_config:
            overrides[topic_name] = broker_config[broker_name]
    if "retention.ms" not in overrides:
        for name, factor in (("log.retention.minutes", 60000), ("log.retention.hours", 3600000)):
            if name in broker_config:
                try:
                    overrides["retention.ms"] = int(str(broker_config[name])) * factor
                except ValueError:
                    raise InvalidConfigError(
                        f"Invalid value {broker_config[name]!r} for configuration {name}: "
                        "expected a whole number",
                        key=name,
                    ) from None
                break
    if "segment.ms" not in overrides and "log.roll.hours" in broker_config:
        overrides["segment.ms"] = int(str(broker_config["log.roll.hours"])) * 3600000
    try:
        return TopicConfig().with_overrides(overrides)
    except InvalidConfigError as exc:
        broker_name = next((b for b, t in BROKER_DEFAULT_NAMES.items() if t == exc.key), exc.key)
        raise InvalidConfigError(str(exc).replace(str(exc.key), str(broker_name)),
                                 key=broker_name) from None
