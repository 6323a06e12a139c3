"""``/connectors``: create, read, configure, control and delete connectors.

Kafka's ``ConnectorsResource`` minus tasks and offsets (``tasks.py``, ``offsets.py``).
Each route parses, calls one ``Herder`` method and serialises its result.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, jsonify, request

from connect.api.errors import NotFoundError
from connect.rest.errors import RestError
from connect.rest.params import config_map, current_herder, json_body, query_bool, rest_config
from connect.runtime.herder import TargetState

__all__ = ["bp", "check_config_name", "location"]

log = logging.getLogger(__name__)

bp = Blueprint("connectors", __name__, url_prefix="/connectors")

#: KIP-980's ``initial_state`` values and the target state each one means.
_INITIAL_STATES = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED,
                   "STOPPED": TargetState.STOPPED}


def location(name: str) -> str:
    return "/connectors/" + quote(name, safe="")


def check_config_name(name: str, config: dict[str, Any]) -> None:
    """A ``name`` in the config must equal the connector's name; a missing one is added."""
    included = config.get("name")
    if included is None:
        config["name"] = name
    elif included != name:
        raise RestError(400, f"Connector name configuration ({included}) doesn't match "
                             f"connector name in the URL ({name})")


# ---------------------------------------------------------------- collection
@bp.get("")
def list_connectors() -> Response:
    herder = current_herder()
    names = herder.connectors()
    expand = request.args.getlist("expand")
    if not expand:
        return jsonify(names)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            out[name] = {kind: _expansion(kind, name) for kind in expand
                         if kind in ("status", "info")}
        except NotFoundError:  # deleted while we looked it up: leave it out, as Kafka does
            log.debug("connector %s disappeared during GET /connectors", name)
    return jsonify(out)


def _expansion(kind: str, name: str) -> dict[str, Any]:
    herder = current_herder()
    if kind == "status":
        return herder.connector_status(name).to_json()
    return herder.connector_info(name).to_json()


@bp.post("")
def create_connector() -> tuple[Response, int, dict[str, str]]:
    body = json_body()
    if not isinstance(body, dict):
        raise RestError(400, 'Request body must be a JSON object: {"name": ..., "config": '
                             '{...}, "initial_state": ...}')
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise RestError(400, "Connector name must be a non-empty string")
    name = name.strip()
    config = config_map(body.get("config"), "Connector config")
    check_config_name(name, config)
    initial_state = _initial_state(body.get("initial_state"))
    _, info = current_herder().put_connector_config(
        name, config, allow_replace=False, initial_state=initial_state)
    return jsonify(info.to_json()), 201, {"Location": location(name)}


def _initial_state(value: Any) -> TargetState | None:
    if value is None:
        return None
    if isinstance(value, str) and value.upper() in _INITIAL_STATES:
        return _INITIAL_STATES[value.upper()]
    raise RestError(400, f"initial_state must be one of {', '.join(_INITIAL_STATES)}, "
                         f"not {value!r}")


# ---------------------------------------------------------------- one connector
@bp.get("/<connector>")
def get_connector(connector: str) -> Response:
    return jsonify(current_herder().connector_info(connector).to_json())


@bp.delete("/<connector>")
def delete_connector(connector: str) -> tuple[str, int]:
    current_herder().delete_connector(connector)
    return "", 204


@bp.get("/<connector>/config")
def get_config(connector: str) -> Response:
    return jsonify(current_herder().connector_config(connector))


@bp.put("/<connector>/config")
def put_config(connector: str) -> tuple[Response, int] | tuple[Response, int, dict[str, str]]:
    config = config_map(json_body(), "Connector config")
    check_config_name(connector, config)
    created, info = current_herder().put_connector_config(connector, config,
                                                          allow_replace=True)
    if created:
        return jsonify(info.to_json()), 201, {"Location": location(connector)}
    return jsonify(info.to_json()), 200


@bp.patch("/<connector>/config")
def patch_config(connector: str) -> Response:
    patch = config_map(json_body(), "Connector config patch", allow_null=True)
    if patch.get("name") is not None and patch["name"] != connector:
        raise RestError(400, f"Connector name configuration ({patch['name']}) doesn't "
                             f"match connector name in the URL ({connector})")
    return jsonify(current_herder().patch_connector_config(connector, patch).to_json())


@bp.get("/<connector>/status")
def get_status(connector: str) -> Response:
    return jsonify(current_herder().connector_status(connector).to_json())


# ---------------------------------------------------------------- control
@bp.post("/<connector>/restart")
def restart_connector(connector: str) -> tuple[Response | str, int]:
    include_tasks = query_bool("includeTasks", False)
    only_failed = query_bool("onlyFailed", False)
    status = current_herder().restart_connector(connector, include_tasks=include_tasks,
                                                only_failed=only_failed)
    if status is None:
        return "", 204
    return jsonify(status.to_json()), 202


@bp.put("/<connector>/pause")
def pause_connector(connector: str) -> tuple[str, int]:
    current_herder().pause_connector(connector)
    return "", 202


@bp.put("/<connector>/resume")
def resume_connector(connector: str) -> tuple[str, int]:
    current_herder().resume_connector(connector)
    return "", 202


@bp.put("/<connector>/stop")
def stop_connector(connector: str) -> tuple[str, int]:
    current_herder().stop_connector(connector)
    return "", 204


# ---------------------------------------------------------------- active topics (KIP-558)
@bp.get("/<connector>/topics")
def get_topics(connector: str) -> Response:
    if not rest_config().topic_tracking_enable:
        raise RestError(403, "Topic tracking is disabled.")
    topics = current_herder().connector_active_topics(connector)
    return jsonify({connector: {"topics": list(topics)}})


@bp.put("/<connector>/topics/reset")
def reset_topics(connector: str) -> tuple[str, int]:
    config = rest_config()
    if not config.topic_tracking_enable:
        raise RestError(403, "Topic tracking is disabled.")
    if not config.topic_tracking_allow_reset:
        raise RestError(403, "Topic tracking reset is disabled.")
    current_herder().reset_connector_active_topics(connector)
    return "", 202
