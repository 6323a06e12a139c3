"""What both herders answer from the installed plugins alone: a connector's type, the
validation of a connector config (Kafka's ``ConfigInfos``) and a plugin's config keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.errors import ConfigError
from connect.runtime.connector_config import config_infos, connector_config_def
from connect.runtime.plugins import Plugins, connector_type
from connect.runtime.secrets import MASK, mask_config, scrub, secret_keys

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
    infos = config_infos(cls.__name__ if cls else cls_name, definition, values, props)
    return _masked_infos(infos, plugins, props)


def _masked_infos(infos: dict[str, Any], plugins: Plugins,
                  props: Mapping[str, str]) -> dict[str, Any]:
    """Hide every secret's value (Kafka hides only ``PASSWORD``-typed ones), and the
    secret itself wherever an error message repeats it."""
    secrets = secret_keys(plugins, props)
    shown = mask_config(props, secrets)
    leaked = sorted({props[k] for k in secrets if props.get(k) and shown[k] == MASK},
                    key=len, reverse=True)
    for entry in infos["configs"]:
        value = entry["value"]
        if value.get("name") in secrets and value.get("value") is not None:
            value["value"] = mask_config({"k": value["value"]}, {"k"})["k"]
        if leaked and value.get("errors"):
            value["errors"] = [scrub(e, leaked) for e in value["errors"]]
    return infos


def plugin_config(plugins: Plugins, plugin: str) -> list[dict[str, Any]]:
    """The config keys a plugin declares (``GET /connector-plugins/{plugin}/config``)."""
    return plugins.plugin_class(plugin)().config().describe()
