"""Internal worker-to-worker endpoints of distributed mode (Kafka's
``InternalConnectResource``), registered only for herders that serve them.

``POST /connectors/{name}/tasks``: a worker running a connector sends the task configs it
generated to the leader, signed with the session key (KIP-507 headers). A bad signature
is a 403; a missing one, or an algorithm this worker does not accept, a 400 (as Kafka).
``PUT /connectors/{name}/fence`` (exactly-once sources) is not served.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from flask import Blueprint, request

from connect.rest.errors import RestError
from connect.rest.params import current_herder, json_body
from connect.runtime.distributed.errors import InternalRequestSignatureError
from connect.runtime.distributed.session_keys import InternalRequestSignature

__all__ = ["InternalRequestHerder", "bp"]

bp = Blueprint("internal", __name__, url_prefix="/connectors/<connector>")


@runtime_checkable
class InternalRequestHerder(Protocol):
    """A herder that accepts task configs from other workers (the distributed one)."""

    def put_task_configs(self, name: str, configs: list[dict[str, str]],
                         signature: InternalRequestSignature | None) -> None: ...


@bp.post("/tasks")
def put_task_configs(connector: str) -> tuple[str, int]:
    body = json_body()
    if not isinstance(body, list) or not all(isinstance(c, dict) for c in body):
        raise RestError(400, "Request body must be a JSON list of task config objects")
    configs: list[dict[str, Any]] = body
    signature = InternalRequestSignature.from_headers(request.get_data(cache=True),
                                                      request.headers)
    herder = current_herder()
    assert isinstance(herder, InternalRequestHerder)  # registered only for such herders
    try:
        herder.put_task_configs(connector, configs, signature)
    except InternalRequestSignatureError as exc:
        raise RestError(exc.status, str(exc)) from exc
    return "", 204
