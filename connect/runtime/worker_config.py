"""The worker's config: Kafka Connect's worker keys, declared once and parsed at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connect.api.config import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    NonEmptyString,
    Range,
)
from connect.api.errors import ConfigError

__all__ = ["DISTRIBUTED_CONFIG_DEF", "WORKER_CONFIG_DEF", "DistributedConfig", "WorkerConfig"]

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


#: Key-signing algorithms a worker can use for internal requests (KIP-507): Java's Mac names.
HMAC_ALGORITHMS = ("HmacSHA256", "HmacSHA384", "HmacSHA512", "HmacSHA1")

#: The worker keys of distributed mode (Kafka's ``DistributedConfig``), on top of
#: ``WORKER_CONFIG_DEF``. Defaults are Kafka's, except that the internal topics have
#: default names and replication factors of -1 (the log's default), as Ferry's single-node
#: broker and the embedded log have no three replicas to offer.
DISTRIBUTED_CONFIG_DEF = (
    ConfigDef(WORKER_CONFIG_DEF)
    .define("group.id", ConfigType.STRING, validator=NonEmptyString(),
            importance=Importance.HIGH,
            documentation="The group of the Connect cluster: workers with the same group id "
            "share connectors and tasks.")
    .define("config.storage.topic", ConfigType.STRING, default="connect-configs",
            validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The compacted single-partition topic of connector and task "
            "configs, target states, restart requests and the session key.")
    .define("config.storage.replication.factor", ConfigType.SHORT, default=-1,
            importance=Importance.LOW,
            documentation="Replication factor of the config topic; -1 for the default.")
    .define("status.storage.topic", ConfigType.STRING, default="connect-status",
            validator=NonEmptyString(), importance=Importance.HIGH,
            documentation="The compacted topic of connector and task statuses.")
    .define("status.storage.partitions", ConfigType.INT, default=5,
            validator=Range.at_least(1), importance=Importance.LOW,
            documentation="Partitions of the status topic when the worker creates it.")
    .define("status.storage.replication.factor", ConfigType.SHORT, default=-1,
            importance=Importance.LOW,
            documentation="Replication factor of the status topic; -1 for the default.")
    .define("session.timeout.ms", ConfigType.INT, default=10000, validator=Range.at_least(1),
            importance=Importance.HIGH,
            documentation="How long the group coordinator waits for a worker's heartbeat "
            "before it takes the worker out of the group.")
    .define("heartbeat.interval.ms", ConfigType.INT, default=3000,
            validator=Range.at_least(1), importance=Importance.HIGH,
            documentation="How often a worker heartbeats; below session.timeout.ms.")
    .define("rebalance.timeout.ms", ConfigType.INT, default=60000,
            validator=Range.at_least(1), importance=Importance.HIGH,
            documentation="How long the coordinator waits for every worker to rejoin in a "
            "rebalance.")
    .define("scheduled.rebalance.max.delay.ms", ConfigType.INT, default=300000,
            validator=Range.at_least(0), importance=Importance.LOW,
            documentation="How long the connectors and tasks of a departed worker stay "
            "unassigned, waiting for it to return, before they are reassigned (KIP-415); 0 "
            "reassigns them at once.")
    .define("connect.protocol", ConfigType.STRING, default="sessioned",
            validator=CaseInsensitiveValidString.in_("eager", "compatible", "sessioned"),
            importance=Importance.LOW,
            documentation="The worker group protocol: compatible (incremental cooperative "
            "rebalancing) or sessioned (the same, with signed internal requests). eager is "
            "refused.")
    .define("worker.sync.timeout.ms", ConfigType.INT, default=3000,
            validator=Range.at_least(1), importance=Importance.MEDIUM,
            documentation="How long a worker may take to read the config topic to the "
            "position an assignment names before it gives up and rejoins.")
    .define("worker.unsync.backoff.ms", ConfigType.INT, default=300000,
            validator=Range.at_least(0), importance=Importance.MEDIUM,
            documentation="Kafka's back-off before a worker that could not read the "
            "config topic in time rejoins. Accepted and unused: a Ferry worker keeps its "
            "assignment, goes on reading, and starts the work once it has read to the "
            "assignment's offset.")
    .define("inter.worker.key.ttl.ms", ConfigType.INT, default=3600000,
            validator=Range.between(0, 2**31 - 1), importance=Importance.LOW,
            documentation="How long the leader uses a session key for signing internal "
            "requests before it distributes a new one.")
    .define("inter.worker.key.generation.algorithm", ConfigType.STRING,
            default="HmacSHA256", validator=CaseInsensitiveValidString.in_(*HMAC_ALGORITHMS),
            importance=Importance.LOW,
            documentation="The algorithm of the session keys the leader generates.")
    .define("inter.worker.key.size", ConfigType.INT, default=None, importance=Importance.LOW,
            documentation="Session key size in bits; unset for the algorithm's default "
            "(its digest size).")
    .define("inter.worker.signature.algorithm", ConfigType.STRING, default="HmacSHA256",
            validator=CaseInsensitiveValidString.in_(*HMAC_ALGORITHMS),
            importance=Importance.LOW,
            documentation="The algorithm a worker signs its internal requests with.")
    .define("inter.worker.verification.algorithms", ConfigType.LIST,
            default=["HmacSHA256"], importance=Importance.LOW,
            documentation="The algorithms a worker accepts on signed internal requests.")
    .define("retry.backoff.ms", ConfigType.LONG, default=100, validator=Range.at_least(0),
            importance=Importance.LOW,
            documentation="The first pause before retrying a failed group or forwarded "
            "request.")
)

#: Keys of the ``*.storage.`` prefixes that are not topic settings (KIP-605).
_STORAGE_KEYS = {"topic", "partitions", "replication.factor"}


@dataclass(frozen=True)
class DistributedConfig:
    """A distributed worker's settings: the common ``worker`` settings plus group
    membership, the config and status topics and internal request signing."""

    worker: WorkerConfig
    group_id: str
    config_storage_topic: str
    config_storage_replication_factor: int
    status_storage_topic: str
    status_storage_partitions: int
    status_storage_replication_factor: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    scheduled_rebalance_max_delay_ms: int
    connect_protocol: str
    worker_sync_timeout_ms: int
    worker_unsync_backoff_ms: int
    inter_worker_key_ttl_ms: int
    inter_worker_key_generation_algorithm: str
    inter_worker_key_size: int | None
    inter_worker_signature_algorithm: str
    inter_worker_verification_algorithms: list[str]
    retry_backoff_ms: int

    @classmethod
    def from_props(cls, props: Mapping[str, Any] | None = None) -> DistributedConfig:
        """Parse ``props``; raises ``ConfigError`` naming the first bad key."""
        raw = {k: str(v) for k, v in (props or {}).items()}
        p = DISTRIBUTED_CONFIG_DEF.parse(raw)
        algorithms = [_java_algorithm(a) for a in p["inter.worker.verification.algorithms"]]
        signature = _java_algorithm(p["inter.worker.signature.algorithm"])
        if signature not in algorithms:
            raise ConfigError("inter.worker.verification.algorithms",
                              f"must include the signature algorithm {signature} "
                              "(inter.worker.signature.algorithm)",
                              value=",".join(algorithms))
        for a in algorithms:
            if a not in HMAC_ALGORITHMS:
                raise ConfigError("inter.worker.verification.algorithms",
                                  f"{a} is not one of {', '.join(HMAC_ALGORITHMS)}", value=a)
        if p["heartbeat.interval.ms"] >= p["session.timeout.ms"]:
            raise ConfigError("heartbeat.interval.ms", "must be lower than session.timeout.ms "
                              f"({p['session.timeout.ms']})", value=p["heartbeat.interval.ms"])
        if p["connect.protocol"].lower() == "eager":
            raise ConfigError("connect.protocol", "the eager protocol is not supported; use "
                              "compatible or sessioned", value="eager")
        return cls(
            worker=WorkerConfig.from_props(raw),
            group_id=p["group.id"],
            config_storage_topic=p["config.storage.topic"],
            config_storage_replication_factor=p["config.storage.replication.factor"],
            status_storage_topic=p["status.storage.topic"],
            status_storage_partitions=p["status.storage.partitions"],
            status_storage_replication_factor=p["status.storage.replication.factor"],
            session_timeout_ms=p["session.timeout.ms"],
            heartbeat_interval_ms=p["heartbeat.interval.ms"],
            rebalance_timeout_ms=p["rebalance.timeout.ms"],
            scheduled_rebalance_max_delay_ms=p["scheduled.rebalance.max.delay.ms"],
            connect_protocol=p["connect.protocol"].lower(),
            worker_sync_timeout_ms=p["worker.sync.timeout.ms"],
            worker_unsync_backoff_ms=p["worker.unsync.backoff.ms"],
            inter_worker_key_ttl_ms=p["inter.worker.key.ttl.ms"],
            inter_worker_key_generation_algorithm=_java_algorithm(
                p["inter.worker.key.generation.algorithm"]),
            inter_worker_key_size=p["inter.worker.key.size"],
            inter_worker_signature_algorithm=signature,
            inter_worker_verification_algorithms=algorithms,
            retry_backoff_ms=p["retry.backoff.ms"])

    def storage_topic_settings(self, prefix: str) -> dict[str, str]:
        """Extra topic configs under ``config.storage.``, ``offset.storage.`` or
        ``status.storage.`` (KIP-605), for creating that topic."""
        return {k: v for k, v in self.worker.with_prefix(prefix).items()
                if k not in _STORAGE_KEYS}

    def replication_factor(self, value: int) -> int | None:
        """A ``*.replication.factor`` for ``create_topic``: None for the log's default."""
        return None if value < 1 else value


def _java_algorithm(name: str) -> str:
    """An algorithm name in Java's spelling (``hmacsha256`` → ``HmacSHA256``)."""
    for known in HMAC_ALGORITHMS:
        if known.lower() == name.strip().lower():
            return known
    return name.strip()
