"""The framework's connector keys (name, connector.class, tasks.max, converters,
transforms, errors.*, topic.creation.*), parsed config, and Kafka's ConfigInfos JSON."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api.config import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    ValidString,
    to_config_string,
)
from connect.transforms.chain_config import chain_config_def

__all__ = ["ErrorConfig", "config_infos", "connector_config_def", "error_config"]

_E = "Error Handling"


def _base_def(sink: bool) -> ConfigDef:
    d = (
        ConfigDef()
        .define("name", ConfigType.STRING, importance=Importance.HIGH, group="Common",
                validator=_connector_name,
                documentation="Globally unique name of the connector.")
        .define("connector.class", ConfigType.STRING, importance=Importance.HIGH,
                group="Common", documentation="The connector: entry-point name, class name, "
                "Kafka class name or module:Class.")
        .define("tasks.max", ConfigType.INT, default=1, validator=Range.at_least(1),
                importance=Importance.HIGH, group="Common",
                documentation="Maximum number of tasks to use for this connector.")
        .define("key.converter", ConfigType.STRING, default=None, importance=Importance.LOW,
                group="Common", documentation="Overrides the worker's key.converter.")
        .define("value.converter", ConfigType.STRING, default=None,
                importance=Importance.LOW, group="Common",
                documentation="Overrides the worker's value.converter.")
        .define("header.converter", ConfigType.STRING, default=None,
                importance=Importance.LOW, group="Common",
                documentation="Overrides the worker's header.converter.")
        .define("errors.retry.timeout", ConfigType.LONG, default=0, group=_E,
                importance=Importance.MEDIUM,
                documentation="Max ms to retry a failed operation; -1 retries forever.")
        .define("errors.retry.delay.max.ms", ConfigType.LONG, default=60000, group=_E,
                validator=Range.at_least(0), importance=Importance.MEDIUM,
                documentation="Max delay between consecutive retries.")
        .define("errors.tolerance", ConfigType.STRING, default="none", group=_E,
                validator=ValidString.in_("none", "all"), importance=Importance.MEDIUM,
                documentation="none fails the task on an error; all skips bad records.")
        .define("errors.log.enable", ConfigType.BOOLEAN, default=False, group=_E,
                importance=Importance.MEDIUM, documentation="Log every error.")
        .define("errors.log.include.messages", ConfigType.BOOLEAN, default=False, group=_E,
                importance=Importance.MEDIUM, documentation="Log the failed record too.")
        .define("errors.deadletterqueue.topic.name", ConfigType.STRING, default="",
                group=_E, importance=Importance.MEDIUM,
                documentation="The dead letter queue topic (sinks as Kafka; Ferry also "
                "for sources, writing the failed record as JSON).")
        .define("errors.deadletterqueue.topic.replication.factor", ConfigType.SHORT,
                default=3, group=_E, importance=Importance.LOW,
                documentation="Replication factor of the DLQ topic when created.")
        .define("errors.deadletterqueue.context.headers.enable", ConfigType.BOOLEAN,
                default=False, group=_E, importance=Importance.LOW,
                documentation="Add __connect.errors.* headers to DLQ records.")
        .define("errors.task.restart.enable", ConfigType.BOOLEAN, default=True, group=_E,
                importance=Importance.LOW,
                documentation="Ferry only: restart a failed task automatically.")
        .define("errors.task.restart.backoff.initial.ms", ConfigType.LONG, default=1000,
                validator=Range.at_least(0), group=_E, importance=Importance.LOW,
                documentation="Ferry only: first delay before restarting a failed task.")
        .define("errors.task.restart.backoff.max.ms", ConfigType.LONG, default=60000,
                validator=Range.at_least(0), group=_E, importance=Importance.LOW,
                documentation="Ferry only: the delay doubles up to this.")
    )
    if sink:
        d.define("topics", ConfigType.LIST, default=[], importance=Importance.HIGH,
                 group="Common", documentation="Topics to consume.")
        d.define("topics.regex", ConfigType.STRING, default="", importance=Importance.HIGH,
                 group="Common", documentation="Regex of topics to consume.")
    else:
        d.define("topic.creation.groups", ConfigType.LIST, default=[],
                 importance=Importance.LOW, group="Topic Creation",
                 documentation="Groups of topic.creation.<group>.* settings.")
    return d


def connector_config_def(props: Mapping[str, Any], own: ConfigDef | None,
                         sink: bool) -> ConfigDef:
    """The full definition validated for a connector: framework keys, transforms and
    predicates the config names, topic-creation keys, then the connector's own."""
    d = chain_config_def(props, _base_def(sink))
    if not sink:
        groups = ["default", *[g.strip() for g in str(props.get("topic.creation.groups", "")
                                                         ).split(",") if g.strip()]]
        for g in groups:
            p = f"topic.creation.{g}."
            d.define(p + "replication.factor", ConfigType.INT, default=-1,
                     validator=_rf, importance=Importance.LOW, group="Topic Creation",
                     documentation="Replication factor of created topics (-1: broker "
                     "default).")
            d.define(p + "partitions", ConfigType.INT, default=-1, validator=_rf,
                     importance=Importance.LOW, group="Topic Creation",
                     documentation="Partitions of created topics (-1: broker default).")
            if g != "default":
                d.define(p + "include", ConfigType.LIST, default=[], importance=Importance.LOW,
                         group="Topic Creation", documentation="Topic regexes.")
                d.define(p + "exclude", ConfigType.LIST, default=[], importance=Importance.LOW,
                         group="Topic Creation", documentation="Topic regexes excluded.")
    if own is not None:
        for key in own.config_keys.values():
            if key.name not in d.config_keys:
                d.define_key(key)
    return d


class _ConnectorName:
    """Kafka's ``NonEmptyStringWithoutControlChars``: a name shows up in logs, URLs and
    topic records, so a line break in it could forge a log line."""

    def ensure_valid(self, name: str, value: Any) -> None:
        from connect.api.errors import ConfigError
        if value is None:
            return
        if not str(value).strip():
            raise ConfigError(name, "String may not be empty", value=value)
        bad = sorted({c for c in str(value) if unicodedata.category(c) == "Cc"})
        if bad:
            raise ConfigError(name, "String may not contain control characters, but had "
                              + ", ".join(repr(c) for c in bad), value=_escaped(value))

    def __str__(self) -> str:
        return "non-empty string without ISO control characters"


def _escaped(value: Any) -> str:
    return str(value).encode("unicode_escape").decode("ascii")


_connector_name = _ConnectorName()


class _RF:
    def ensure_valid(self, name: str, value: Any) -> None:
        from connect.api.errors import ConfigError
        if value is not None and value != -1 and value < 1:
            raise ConfigError(name, "must be -1 or at least 1", value=value)

    def __str__(self) -> str:
        return "-1 or [1,...]"


_rf = _RF()


def config_infos(name: str, definition: ConfigDef, values: list[ConfigValue],
                 props: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's ``ConfigInfos``: every defined key with its value and errors, plus the
    undefined keys given (``"definition": null``), as the validate endpoint returns."""
    by_name = {v.name: v for v in values}
    configs: list[dict[str, Any]] = []
    keys = definition.config_keys
    for key_name, key in keys.items():
        v = by_name.get(key_name, ConfigValue(key_name))
        configs.append({"definition": key.describe(), "value": _value_json(key, v, props)})
    for v in values:
        if v.name not in keys:
            configs.append({"definition": None, "value": _plain_value(v, props)})
    for key_name in props:
        if key_name not in keys and key_name not in by_name:
            configs.append({"definition": None, "value": {
                "name": key_name, "value": str(props[key_name]), "recommended_values": [],
                "errors": [], "visible": True}})
    return {"name": name, "error_count": sum(len(v.errors) for v in values),
            "groups": definition.groups(), "configs": configs}


def _value_json(key: ConfigKey, v: ConfigValue, props: Mapping[str, Any]) -> dict[str, Any]:
    if key.type is ConfigType.PASSWORD and v.value is not None:
        shown: Any = "[hidden]"
    elif key.name in props:
        shown = str(props[key.name])
    else:
        shown = to_config_string(v.value, key.type)
    return {"name": v.name, "value": shown,
            "recommended_values": [str(r) for r in v.recommended_values],
            "errors": list(v.errors), "visible": v.visible}


def _plain_value(v: ConfigValue, props: Mapping[str, Any]) -> dict[str, Any]:
    shown = props.get(v.name, v.value)
    return {"name": v.name, "value": None if shown is None else str(shown),
            "recommended_values": [str(r) for r in v.recommended_values],
            "errors": list(v.errors), "visible": v.visible}


@dataclass(frozen=True)
class ErrorConfig:
    """The parsed ``errors.*`` keys of one connector."""

    tolerance_all: bool
    retry_timeout_ms: int
    retry_delay_max_ms: int
    log_enable: bool
    log_include_messages: bool
    dlq_topic: str
    dlq_replication_factor: int
    dlq_context_headers: bool
    restart_enable: bool
    restart_backoff_initial_ms: int
    restart_backoff_max_ms: int


def error_config(props: Mapping[str, Any]) -> ErrorConfig:
    p = _base_def(sink=False).parse({"name": "x", "connector.class": "x",
                                     **{k: v for k, v in props.items()
                                        if k.startswith("errors.")}})
    return ErrorConfig(
        tolerance_all=p["errors.tolerance"] == "all",
        retry_timeout_ms=p["errors.retry.timeout"],
        retry_delay_max_ms=p["errors.retry.delay.max.ms"],
        log_enable=p["errors.log.enable"],
        log_include_messages=p["errors.log.include.messages"],
        dlq_topic=p["errors.deadletterqueue.topic.name"] or "",
        dlq_replication_factor=p["errors.deadletterqueue.topic.replication.factor"],
        dlq_context_headers=p["errors.deadletterqueue.context.headers.enable"],
        restart_enable=p["errors.task.restart.enable"],
        restart_backoff_initial_ms=p["errors.task.restart.backoff.initial.ms"],
        restart_backoff_max_ms=p["errors.task.restart.backoff.max.ms"])
