"""``/connectors/{name}/offsets`` (KIP-875): read, alter and reset a connector's offsets.

Altering and resetting need a STOPPED connector; the herder enforces that
(``BadRequestError``, 400). This module checks only the request's shape:
``{"offsets": [{"partition": {...}, "offset": {...} | null}, ...]}``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from connect.rest.errors import RestError
from connect.rest.params import current_herder, json_body

__all__ = ["bp"]

bp = Blueprint("offsets", __name__, url_prefix="/connectors/<connector>/offsets")


@bp.get("")
def get_offsets(connector: str) -> Response:
    return jsonify({"offsets": current_herder().connector_offsets(connector)})


@bp.patch("")
def alter_offsets(connector: str) -> Response:
    offsets = _offsets(json_body())
    return jsonify({"message": current_herder().alter_connector_offsets(connector, offsets)})


@bp.delete("")
def reset_offsets(connector: str) -> Response:
    return jsonify({"message": current_herder().reset_connector_offsets(connector)})


def _offsets(body: Any) -> list[dict[str, Any]]:
    entries = body.get("offsets") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise RestError(400, 'Request body must be {"offsets": [{"partition": {...}, '
                             '"offset": {...}}, ...]}')
    if not entries:
        raise RestError(400, "Partitions to modify cannot be empty")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("partition"), dict):
            raise RestError(400, f"offsets[{i}] must be an object with a \"partition\" object")
        if entry.get("offset") is not None and not isinstance(entry["offset"], dict):
            raise RestError(400, f"offsets[{i}].offset must be an object, or null to reset "
                                 "that partition")
    return [{"partition": e["partition"], "offset": e.get("offset")} for e in entries]
