"""``/connector-plugins``: installed plugins, a plugin's config keys, config validation."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from connect.rest.errors import RestError
from connect.rest.params import config_map, current_herder, json_body, query_bool

__all__ = ["bp", "plugin_matches"]

bp = Blueprint("plugins", __name__, url_prefix="/connector-plugins")

_SUFFIX = "Connector"


def plugin_matches(connector_class: str, plugin: str) -> bool:
    """Kafka's alias-aware check: ``org.x.FileStreamSinkConnector`` matches the plugin
    ``FileStreamSinkConnector``, ``FileStreamSink`` and itself."""
    return _normalized(connector_class).endswith(_normalized(plugin))


def _normalized(name: str) -> str:
    if name.endswith(_SUFFIX) and len(name) > len(_SUFFIX):
        return name[: -len(_SUFFIX)]
    return name


@bp.get("")
def list_plugins() -> Response:
    plugins = current_herder().connector_plugins(query_bool("connectorsOnly", True))
    return jsonify([plugin.to_json() for plugin in plugins])


@bp.get("/<plugin>/config")
def plugin_config(plugin: str) -> Response:
    return jsonify(current_herder().plugin_config(plugin))


@bp.put("/<plugin>/config/validate")
def validate_config(plugin: str) -> Response:
    """200 with the ConfigInfos even when it reports errors; 400 only when the body's
    ``connector.class`` names another plugin. A missing ``connector.class`` is taken
    from the URL, so the body may hold just the connector's own keys."""
    config = config_map(json_body(), "Connector config")
    included = config.get("connector.class")
    if included is None:
        config["connector.class"] = plugin
    elif not plugin_matches(included, plugin):
        raise RestError(400, f"Included connector type {included} does not match request "
                             f"type {plugin}")
    return jsonify(current_herder().validate_connector_config(config))
