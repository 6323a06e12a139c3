"""DescribeConfigs (key 32) v1-4: topic configs with their sources, and this broker's: the
settings it reads and the dynamic configs set by AlterConfigs, each with its source
(per-broker dynamic, cluster-default dynamic, config file, Kafka's default)."""

from __future__ import annotations

from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse

from core.broker.admin_common import (
    AdminError,
    ConfigEntry,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    check_broker_name,
    storage_error,
    topic_config_entries,
    topic_config_type,
)
from core.broker.config import BROKER_CONFIGS
from core.broker.dynamic_names import DYNAMIC_CONFIGS, LISTENER_PREFIXED, is_sensitive
from core.broker.registry import handles
from core.broker.security.access import AclOperation, check_config_access
from core.broker.state import BrokerState, RequestContext
from core.log.config import BROKER_DEFAULT_NAMES, TOPIC_CONFIGS
from core.log.errors import StorageError
from core.log.topic_metadata import validate_topic_name
from core.protocol.errors import ErrorCode

__all__ = ["broker_config_entries", "handle_describe_configs"]

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Config = _Result.DescribeConfigsResourceResult
_Synonym = _Config.DescribeConfigsSynonym

_BROKER_TYPES = {"int": ConfigType.INT, "bool": ConfigType.BOOLEAN, "str": ConfigType.STRING}
#: How BrokerConfig spells a key given under another name.
_BROKER_ALIASES = {"node.id": ("broker.id",), "log.dirs": ("log.dir",)}


@handles(DescribeConfigsRequest, versions=(1, 4))
async def handle_describe_configs(state: BrokerState, ctx: RequestContext
                                  ) -> DescribeConfigsResponse:
    req = ctx.request
    version = ctx.api_version
    results = []
    for resource in req.resources:
        keys = resource.configuration_keys
        try:
            check_config_access(state, ctx, resource.resource_type, resource.resource_name,
                                AclOperation.DESCRIBE_CONFIGS)
            entries = _describe(state, resource.resource_type, resource.resource_name)
        except AdminError as exc:
            results.append(_Result(version=version, error_code=int(exc.code),
                                   error_message=exc.message,
                                   resource_type=resource.resource_type,
                                   resource_name=resource.resource_name, configs=[]))
            continue
        if keys is not None:
            # Null asks for every config; listed names that do not exist are left out.
            wanted = set(keys)
            entries = [e for e in entries if e.name in wanted]
        results.append(_Result(
            version=version, error_code=ErrorCode.NONE, error_message=None,
            resource_type=resource.resource_type, resource_name=resource.resource_name,
            configs=[_config(version, e, req.include_synonyms, req.include_documentation)
                     for e in entries]))
    return DescribeConfigsResponse(version=version, throttle_time_ms=0, results=results)


def _describe(state: BrokerState, resource_type: int, name: str) -> list[ConfigEntry]:
    if resource_type == ConfigResourceType.TOPIC:
        try:
            validate_topic_name(name)
            metadata = state.manager.topic(name)
        except StorageError as exc:
            raise storage_error(exc, name) from exc
        return topic_config_entries(metadata, state.manager.defaults, state.dynamic)
    if resource_type == ConfigResourceType.BROKER:
        if name == "":
            # The cluster-wide default level: only what AlterConfigs set there, as Kafka.
            level = state.dynamic.level(True) if state.dynamic is not None else {}
            return [ConfigEntry(name=k, value=v,
                                source=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                                config_type=ConfigType.STRING, sensitive=is_sensitive(k),
                                synonyms=[ConfigSynonym(
                                    k, None if is_sensitive(k) else v,
                                    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)])
                    for k, v in sorted(level.items())]
        check_broker_name(state, name)
        return broker_config_entries(state)
    raise AdminError(ErrorCode.INVALID_REQUEST,
                     f"Unsupported config resource type {resource_type}: Ferry describes "
                     "topics (2) and brokers (4)")


def broker_config_entries(state: BrokerState) -> list[ConfigEntry]:
    """Every setting this broker reads, the broker-level topic defaults, and every other
    dynamic config set by AlterConfigs, each with its source. Read-only unless Kafka
    lets AlterConfigs change it (``core.broker.dynamic_names``)."""
    config = state.config
    dynamic = state.dynamic
    given = dynamic.static if dynamic is not None else config.raw
    entries = []
    for key in BROKER_CONFIGS.values():
        value = getattr(config, key.name.replace(".", "_"))
        rendered = ("true" if value else "false") if key.type == "bool" else str(value)
        names = (key.name, *_BROKER_ALIASES.get(key.name, ()))
        static = next((given[n] for n in names if n in given), None)
        entries.append(_broker_entry(state, key.name, rendered,
                                     _default_text(key.type, key.default), static,
                                     _BROKER_TYPES.get(key.type, ConfigType.UNKNOWN), key.doc))
    defaults = state.manager.defaults
    for broker_name, topic_name in BROKER_DEFAULT_NAMES.items():
        topic_key = TOPIC_CONFIGS[topic_name]
        entries.append(_broker_entry(
            state, broker_name, topic_key.render(getattr(defaults, topic_key.attribute)),
            topic_key.render(topic_key.default), given.get(broker_name),
            topic_config_type(topic_key.type),
            f"The default {topic_name} of topics. {topic_key.doc}"))
    described = {e.name for e in entries}
    if dynamic is not None:
        levels = {**dynamic.level(True), **dynamic.level(False)}
        for name in sorted(set(levels) - described):
            entries.append(_broker_entry(state, name, levels[name], None, given.get(name),
                                         ConfigType.STRING, None))
    return sorted(entries, key=lambda e: e.name)


def _broker_entry(state: BrokerState, name: str, value: str, default: str | None,
                  static: str | None, config_type: ConfigType, doc: str | None) -> ConfigEntry:
    """One broker config; synonyms from the most specific source to Kafka's default."""
    synonyms = []
    if state.dynamic is not None:
        for cluster_default, source in ((False, ConfigSource.DYNAMIC_BROKER_CONFIG),
                                        (True, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
            level = state.dynamic.level(cluster_default)
            if name in level:
                synonyms.append(ConfigSynonym(name, level[name], source))
    if static is not None:
        synonyms.append(ConfigSynonym(name, static, ConfigSource.STATIC_BROKER_CONFIG))
    if default is not None:
        synonyms.append(ConfigSynonym(name, default, ConfigSource.DEFAULT_CONFIG))
    read_only = name not in DYNAMIC_CONFIGS and not LISTENER_PREFIXED.fullmatch(name)
    sensitive = is_sensitive(name)
    if sensitive:
        synonyms = [ConfigSynonym(s.name, None, s.source) for s in synonyms]
    return ConfigEntry(name=name, value=value, source=synonyms[0].source, read_only=read_only,
                       sensitive=sensitive, config_type=config_type, documentation=doc,
                       synonyms=synonyms)


def _default_text(key_type: str, default: object) -> str:
    if key_type == "bool":
        return "true" if default else "false"
    return str(default)


def _config(version: int, entry: ConfigEntry, synonyms: bool, documentation: bool
            ) -> DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult:
    return _Config(
        version=version, name=entry.name, value=None if entry.sensitive else entry.value,
        read_only=entry.read_only, config_source=int(entry.source),
        is_sensitive=entry.sensitive, config_type=int(entry.config_type),
        documentation=entry.documentation if documentation else None,
        synonyms=[_Synonym(version=version, name=s.name, value=s.value, source=int(s.source))
                  for s in entry.synonyms] if synonyms else [])
