"""What both herders answer from the installed plugins alone: a connector's type, the
validation of a connector config (Kafka's ``ConfigInfos``) and a plugin's config keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.errors import ConfigError
from connect.runtime.connector_config import config_infos, connector_config_def
from connect.runtime.plugins import Plugins, connector_type

__all__ = ["connector_type_of", "plugin_config", "validate_connector_config"]


def connector_type_of(plugins: Plugins, config: Mapping[str, str]) -> str:
    """``source``, ``sink``, or ``unknown`` when the class cannot be found."""
    try:
        return connector_type(plugins.connector_class(config["connector.class"]))
    except (ConfigError, KeyError):
        return "unknown"


def validate_connector_config(plugins: Plugins, config: Mapping[str, str]) -> dict[str, Any]:
    """Kafka's ``ConfigInfos`` for ``config``: the framework's keys, the connector's own
    definition and ``validate``, and a sink's topics requirement."""
    props = {k: str(v) for k, v in config.items()}
    own, sink, cls_name = None, False, props.get("connector.class", "")
    connector = None
    try:
        cls = plugins.connector_class(cls_name) if cls_name else None
    except ConfigError:
        cls = None
    if cls is not None:
        connector = cls()
        own = connector.config()
        sink = connector_type(cls) == "sink"
    definition = connector_config_def(props, own, sink)
    values = definition.validate(props)
    if cls_name and cls is None:
        for v in values:
            if v.name == "connector.class":
                v.add_error_message(f"Class {cls_name} could not be found.")
    if connector is not None:
        by_name = {v.name: v for v in values}
        for v in connector.validate(props).config_values:
            if v.name in by_name and v.errors:
                by_name[v.name].errors.extend(e for e in v.errors
                                              if e not in by_name[v.name].errors)
    if sink and not props.get("topics") and not props.get("topics.regex"):
        for v in values:
            if v.name == "topics":
                v.add_error_message("Must configure one of topics or topics.regex")
    return config_infos(cls.__name__ if cls else cls_name, definition, values, props)


def plugin_config(plugins: Plugins, plugin: str) -> list[dict[str, Any]]:
    """The config keys a plugin declares (``GET /connector-plugins/{plugin}/config``)."""
    return plugins.plugin_class(plugin)().config().describe()
