"""What the admin handlers share: Kafka's config enums, topic config views, error mapping.

Topic admin (CreateTopics, DeleteTopics, CreatePartitions, the config APIs) answers per
topic or per resource; a problem with one never fails the others. Validation inside a
handler raises ``AdminError`` with the Kafka error code and message to send, and every
storage error is mapped by ``storage_error`` at this edge.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, TypeVar

from core.log.config import (
    BROKER_DEFAULT_NAMES,
    TOPIC_CONFIGS,
    ConfigKey,
    TopicConfig,
    parse_topic_configs,
)
from core.log.errors import (
    InvalidConfigError,
    InvalidTopicError,
    StorageError,
    TopicExistsError,
    UnknownTopicError,
)
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.config import BrokerConfig
    from core.broker.dynamic_config import DynamicBrokerConfigs
    from core.broker.state import BrokerState
    from core.log.topic_metadata import TopicMetadata

__all__ = [
    "LIVE_BROKERS",
    "AdminError",
    "ConfigEntry",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "alter_broker",
    "alter_topic",
    "check_alterable",
    "check_broker_name",
    "check_replicas",
    "config_values",
    "duplicates",
    "in_thread",
    "storage_error",
    "topic_config_entries",
    "topic_config_type",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

#: Brokers of this cluster. Ferry's broker runs alone, so any replication factor above
#: this cannot be met.
LIVE_BROKERS = 1


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type codes (not the ACL resource types)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigsResponse.ConfigSource: where a config's value comes from."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigType(IntEnum):
    """Kafka's DescribeConfigsResponse.ConfigType (DescribeConfigs v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


_CONFIG_TYPES = {"boolean": ConfigType.BOOLEAN, "string": ConfigType.STRING,
                 "int": ConfigType.INT, "long": ConfigType.LONG, "double": ConfigType.DOUBLE,
                 "list": ConfigType.LIST}
#: topic config name -> the broker config that sets its default (``retention.ms`` ->
#: ``log.retention.ms``), Kafka's synonym.
_BROKER_SYNONYMS = {topic: broker for broker, topic in BROKER_DEFAULT_NAMES.items()}


class AdminError(Exception):
    """One topic's or resource's request cannot be served: answer ``code`` with the
    message (Kafka's wording where Kafka has one)."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One config as DescribeConfigs (and CreateTopics v5+) reports it."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    sensitive: bool = False
    config_type: ConfigType = ConfigType.UNKNOWN
    documentation: str | None = None
    #: Every source that sets this config, most specific (the effective one) first.
    synonyms: list[ConfigSynonym] = field(default_factory=list)


def topic_config_entries(metadata: TopicMetadata, broker_defaults: TopicConfig,
                         dynamic: DynamicBrokerConfigs | None = None) -> list[ConfigEntry]:
    """Every topic config of ``metadata`` with its effective value and source.

    A per-topic override is DYNAMIC_TOPIC_CONFIG; a broker default set by AlterConfigs is
    DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG (``dynamic``); a default that the
    broker's config file changed (``log.retention.ms`` ...) is STATIC_BROKER_CONFIG;
    anything else is Kafka's own default, DEFAULT_CONFIG. Synonyms list the same chain the
    way Kafka does. Without dynamic configs the config file's setting is recognised by its
    effect, so one set to Kafka's own default reads as DEFAULT_CONFIG (with the same value).
    """
    return [_topic_entry(key, metadata, broker_defaults, dynamic)
            for key in TOPIC_CONFIGS.values()]


def _topic_entry(key: ConfigKey, metadata: TopicMetadata, broker_defaults: TopicConfig,
                 dynamic: DynamicBrokerConfigs | None) -> ConfigEntry:
    override = metadata.overrides.get(key.name)
    broker_name = _BROKER_SYNONYMS.get(key.name, key.name)
    builtin = key.render(key.default)
    synonyms = []
    if override is not None:
        synonyms.append(ConfigSynonym(key.name, override, ConfigSource.DYNAMIC_TOPIC_CONFIG))
    if dynamic:
        for cluster_default, source in ((False, ConfigSource.DYNAMIC_BROKER_CONFIG),
                                        (True, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
            value = dynamic.level(cluster_default).get(broker_name)
            if value is not None:
                synonyms.append(ConfigSynonym(broker_name, value, source))
        static = dynamic.static.get(broker_name)
        if static is not None:
            synonyms.append(ConfigSynonym(broker_name, static,
                                          ConfigSource.STATIC_BROKER_CONFIG))
    else:
        broker_value = key.render(getattr(broker_defaults, key.attribute))
        if broker_value != builtin:
            synonyms.append(ConfigSynonym(broker_name, broker_value,
                                          ConfigSource.STATIC_BROKER_CONFIG))
    synonyms.append(ConfigSynonym(broker_name, builtin, ConfigSource.DEFAULT_CONFIG))
    return ConfigEntry(
        name=key.name,
        value=key.render(getattr(metadata.config, key.attribute)),
        source=synonyms[0].source,
        config_type=topic_config_type(key.type),
        documentation=key.doc,
        synonyms=synonyms,
    )


def topic_config_type(key_type: str) -> ConfigType:
    """The ConfigType of a ``core.log.config.ConfigKey`` type name."""
    return _CONFIG_TYPES.get(key_type, ConfigType.UNKNOWN)


def check_broker_name(state: BrokerState, name: str) -> None:
    """A broker resource names this node by its id, as Kafka's ConfigHelper requires."""
    try:
        broker_id = int(name)
    except ValueError:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != state.node_id:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unexpected broker id, expected {state.node_id} or empty string, "
                         f"but received {name}")


def storage_error(exc: StorageError, what: str) -> AdminError:
    """The answer for a storage error raised while serving ``what`` (a topic name)."""
    if isinstance(exc, TopicExistsError):
        return AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc))
    if isinstance(exc, UnknownTopicError):
        return AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc))
    if isinstance(exc, InvalidTopicError):
        return AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc))
    if isinstance(exc, InvalidConfigError):
        return AdminError(ErrorCode.INVALID_CONFIG, str(exc))
    log.error("admin request on %s failed: %s", what, exc, exc_info=exc)
    return AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}")


def duplicates(names: list[str]) -> set[str]:
    """Names that appear more than once (Kafka answers each of them INVALID_REQUEST)."""
    return {name for name, count in Counter(names).items() if count > 1}


async def alter_each_resource(
        resources: Sequence[R], alter: Callable[[R], Awaitable[None]]
) -> list[tuple[R, ErrorCode, str | None]]:
    """Run ``alter`` on each distinct resource of an (Incremental)AlterConfigs request.

    Kafka answers each resource once, and a resource named twice gets INVALID_REQUEST
    rather than being applied twice; an ``AdminError`` becomes that resource's answer.
    """
    names = [f"{r.resource_type}:{r.resource_name}" for r in resources]  # type: ignore[attr-defined]
    repeated = duplicates(names)
    answered: set[str] = set()
    outcomes: list[tuple[R, ErrorCode, str | None]] = []
    for resource, key in zip(resources, names, strict=True):
        if key in answered:
            continue
        answered.add(key)
        try:
            if key in repeated:
                raise AdminError(ErrorCode.INVALID_REQUEST, "Duplicate resource in request.")
            await alter(resource)
        except AdminError as exc:
            outcomes.append((resource, exc.code, exc.message))
        else:
            outcomes.append((resource, ErrorCode.NONE, None))
    return outcomes


def check_replicas(state: BrokerState, broker_ids: list[int], partition: int) -> None:
    """A manual replica assignment can only name this node, once."""
    if not broker_ids:
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"The manual partition assignment of partition {partition} is empty.")
    if len(set(broker_ids)) != len(broker_ids):
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"The manual partition assignment of partition {partition} contains "
                         f"duplicate broker ids: {broker_ids}.")
    for broker_id in broker_ids:
        if broker_id != state.node_id:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"The manual partition assignment includes broker {broker_id}, "
                             "but no broker with that ID is registered.")


async def in_thread(state: BrokerState, fn: Callable[..., T], *args: object,
                    **kwargs: object) -> T:
    """Run a LogManager admin call off the event loop: creating or deleting a topic
    opens, fsyncs or removes a directory per partition, which must not stall every
    connection. The LogManager serialises admin calls itself."""
    return await state.loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))


def alter_topic(state: BrokerState, name: str, set_configs: Mapping[str, str],
                delete_configs: list[str], validate_only: bool) -> None:
    """Set and delete overrides of topic ``name`` (blocking: run it with ``in_thread``).
    With ``validate_only`` the result is computed and checked, and nothing changes."""
    manager = state.manager
    if not validate_only:
        manager.alter_topic_configs(name, set_configs, delete_configs)
        log.info("altered configs of topic %s: set %s, deleted %s", name, dict(set_configs),
                 delete_configs)
        return
    metadata = manager.topic(name)
    for key in delete_configs:
        if key not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {key}", key=key)
    overrides = {k: v for k, v in metadata.overrides.items() if k not in delete_configs}
    overrides.update(parse_topic_configs(set_configs))
    manager.defaults.with_overrides(overrides)


def check_alterable(state: BrokerState, resource_type: int, resource_name: str,
                    keys: list[str]) -> None:
    """Raise AdminError unless an alter request for this resource can be served: a topic,
    or this broker ("" for the cluster-wide default), with no key given twice."""
    if duplicates(keys):
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Error due to duplicate config keys: {sorted(duplicates(keys))}")
    if resource_type == ConfigResourceType.BROKER:
        if resource_name != "":
            check_broker_name(state, resource_name)
        if state.dynamic is None:
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             "this broker keeps no dynamic configs: change its config file "
                             "and restart it")
        return
    if resource_type != ConfigResourceType.TOPIC:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Unsupported config resource type {resource_type}: Ferry alters "
                         "topic (2) and broker (4) configs")


async def alter_broker(state: BrokerState, resource_name: str,
                       update: Callable[[dict[str, str]], dict[str, str]],
                       validate_only: bool) -> None:
    """Change this broker's dynamic configs (``resource_name`` "": the cluster-wide
    default level): ``update`` maps the level's current configs to its new complete set
    (raising AdminError for a bad operation). The change is stored, then applied."""
    dynamic = state.dynamic
    assert dynamic is not None  # check_alterable refused the resource otherwise

    def apply(config: BrokerConfig) -> None:
        state.config = config
        if config.topic_defaults != state.manager.defaults:
            state.manager.set_defaults(config.topic_defaults)

    def change() -> None:
        dynamic.change(resource_name == "", update, validate_only, apply)

    await in_thread(state, change)


def config_values(configs: Mapping[str, str | None], what: str) -> dict[str, str]:
    """Request configs with their values; a null value is INVALID_CONFIG naming the key."""
    out = {}
    for name, value in configs.items():
        if value is None:
            raise AdminError(ErrorCode.INVALID_CONFIG,
                             f"Null value not supported for {what} config: {name}")
        out[name] = value
    return out
