"""``/config`` and ``/mode``: global and per-subject compatibility levels and modes."""

from __future__ import annotations

from flask import Blueprint, Response

from schema_registry.rest.app import context, write
from schema_registry.rest.http import bool_arg, json_body, json_response, path_arg

__all__ = ["bp"]

bp = Blueprint("config", __name__)


@bp.get("/config")
def get_global_config() -> Response:
    return json_response(context().registry.get_config(None))


@bp.get("/config/<subject>")
def get_subject_config(subject: str) -> Response:
    return json_response(context().registry.get_config(
        path_arg(subject), default_to_global=bool_arg("defaultToGlobal")))


@bp.put("/config")
def put_global_config() -> Response:
    body, registry = json_body(), context().registry
    return write(lambda: registry.set_config(None, body))


@bp.put("/config/<subject>")
def put_subject_config(subject: str) -> Response:
    name, body, registry = path_arg(subject), json_body(), context().registry
    return write(lambda: registry.set_config(name, body))


@bp.delete("/config")
def delete_global_config() -> Response:
    registry = context().registry
    return write(lambda: registry.delete_config(None))


@bp.delete("/config/<subject>")
def delete_subject_config(subject: str) -> Response:
    name, registry = path_arg(subject), context().registry
    return write(lambda: registry.delete_config(name))


@bp.get("/mode")
def get_global_mode() -> Response:
    return json_response(context().registry.get_mode(None))


@bp.get("/mode/<subject>")
def get_subject_mode(subject: str) -> Response:
    return json_response(context().registry.get_mode(
        path_arg(subject), default_to_global=bool_arg("defaultToGlobal")))


@bp.put("/mode")
def put_global_mode() -> Response:
    body, force, registry = json_body(), bool_arg("force"), context().registry
    return write(lambda: registry.set_mode(None, body, force=force))


@bp.put("/mode/<subject>")
def put_subject_mode(subject: str) -> Response:
    name, body, force = path_arg(subject), json_body(), bool_arg("force")
    registry = context().registry
    return write(lambda: registry.set_mode(name, body, force=force))


@bp.delete("/mode")
def delete_global_mode() -> Response:
    registry = context().registry
    return write(lambda: registry.delete_mode(None))


@bp.delete("/mode/<subject>")
def delete_subject_mode(subject: str) -> Response:
    name, registry = path_arg(subject), context().registry
    return write(lambda: registry.delete_mode(name))
