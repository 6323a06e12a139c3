"""The worker's config: Kafka Connect's worker keys, declared once and parsed at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, Range

__all__ = ["WORKER_CONFIG_DEF", "WorkerConfig"]

WORKER_CONFIG_DEF = (
    ConfigDef()
    .define("key.converter", ConfigType.STRING, default="JsonConverter",
            importance=Importance.HIGH, documentation="Default converter of record keys.")
    .define("value.converter", ConfigType.STRING, default="JsonConverter",
            importance=Importance.HIGH, documentation="Default converter of record values.")
    .define("header.converter", ConfigType.STRING, default="SimpleHeaderConverter",
            importance=Importance.LOW, documentation="Default converter of header values.")
    .define("offset.flush.interval.ms", ConfigType.LONG, default=60000,
            validator=Range.at_least(0), importance=Importance.LOW,
            documentation="How often tasks commit offsets.")
    .define("offset.storage.topic", ConfigType.STRING, default="connect-offsets",
            importance=Importance.HIGH, documentation="The compacted topic of source offsets.")
    .define("offset.storage.partitions", ConfigType.INT, default=25,
            validator=Range.at_least(1), importance=Importance.LOW,
            documentation="Partitions of the offsets topic when the worker creates it.")
    .define("offset.storage.replication.factor", ConfigType.SHORT, default=-1,
            importance=Importance.LOW,
            documentation="Replication factor of the offsets topic; -1 for the default.")
    .define("task.shutdown.graceful.timeout.ms", ConfigType.LONG, default=5000,
            validator=Range.at_least(0), importance=Importance.LOW,
            documentation="How long to wait for a task to stop before abandoning its "
            "thread.")
    .define("topic.creation.enable", ConfigType.BOOLEAN, default=True,
            importance=Importance.LOW,
            documentation="Whether source connectors may create their topics (KIP-158).")
    .define("config.providers", ConfigType.LIST, default=[], importance=Importance.LOW,
            documentation="Names of the config providers (config.providers.NAME.class).")
    .define("connect.configs.file", ConfigType.STRING, default=None,
            importance=Importance.LOW,
            documentation="Ferry only: a JSON file where the standalone herder keeps "
            "connector configs and target states across restarts; unset keeps them in "
            "memory only, as Kafka's standalone worker does.")
)


@dataclass(frozen=True)
class WorkerConfig:
    """Parsed worker settings; ``originals`` keeps every key (converter sub-keys,
    ``config.providers.*``, ``producer.*`` ...)."""

    key_converter: str
    value_converter: str
    header_converter: str
    offset_flush_interval_ms: int
    offset_storage_topic: str
    offset_storage_partitions: int
    offset_storage_replication_factor: int
    task_shutdown_graceful_timeout_ms: int
    topic_creation_enable: bool
    config_providers: list[str]
    connect_configs_file: str | None
    originals: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_props(cls, props: Mapping[str, Any] | None = None) -> WorkerConfig:
        """Parse ``props``; raises ``ConfigError`` naming the first bad key."""
        raw = {k: str(v) for k, v in (props or {}).items()}
        p = WORKER_CONFIG_DEF.parse(raw)
        rf = p["offset.storage.replication.factor"]
        return cls(
            key_converter=p["key.converter"], value_converter=p["value.converter"],
            header_converter=p["header.converter"],
            offset_flush_interval_ms=p["offset.flush.interval.ms"],
            offset_storage_topic=p["offset.storage.topic"],
            offset_storage_partitions=p["offset.storage.partitions"],
            offset_storage_replication_factor=rf,
            task_shutdown_graceful_timeout_ms=p["task.shutdown.graceful.timeout.ms"],
            topic_creation_enable=p["topic.creation.enable"],
            config_providers=list(p["config.providers"]),
            connect_configs_file=p["connect.configs.file"], originals=raw)

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Original keys under ``prefix``, the prefix removed."""
        return {k[len(prefix):]: v for k, v in self.originals.items() if k.startswith(prefix)}
