"""``/connectors/{name}/tasks``: task configs, one task's status, restarting a task."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from connect.rest.params import current_herder

__all__ = ["bp"]

bp = Blueprint("tasks", __name__, url_prefix="/connectors/<connector>/tasks")


@bp.get("")
def list_tasks(connector: str) -> Response:
    return jsonify([task.to_json() for task in current_herder().task_configs(connector)])


@bp.get("/<int:task>/status")
def task_status(connector: str, task: int) -> Response:
    return jsonify(current_herder().task_status(connector, task).to_json())


@bp.post("/<int:task>/restart")
def restart_task(connector: str, task: int) -> tuple[str, int]:
    current_herder().restart_task(connector, task)
    return "", 204
