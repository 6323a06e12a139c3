"""Forwarding: a request the herder says must run on another worker is sent there.

A distributed herder raises ``RequestTargetError`` (``NotLeaderError`` for config writes,
``NotAssignedError`` for restarts) naming the worker that can run the request. This error
handler relays the request there, as Kafka's ``HerderRequestHandler`` does, and answers
with that worker's response (status, body, ``Location``). The hidden ``forward`` query
parameter bounds the hops to two: a user's request (no ``forward``) is forwarded with
``forward=true``; that worker may forward once more with ``forward=false``; a request with
``forward=false`` that still cannot run answers 409. Without a target (no leader known),
or when the target cannot be reached (it may just have died), the answer is 409 too: the
client should retry once the rebalance is over.
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import quote, urlencode

from flask import Flask, Response, current_app, request

from connect.rest.errors import error_response
from connect.rest.log_text import printable
from connect.rest.params import CLIENT_TLS_KEY
from connect.runtime.distributed.errors import RequestTargetError
from connect.runtime.distributed.forwarding import ForwardingError, http_request
from connect.runtime.distributed.session_keys import ALGORITHM_HEADER, SIGNATURE_HEADER

__all__ = ["register_forwarding"]

log = logging.getLogger(__name__)

NO_LEADER_MESSAGE = ("Cannot complete request momentarily due to no known leader URL, "
                     "likely because a rebalance was underway.")
CONFLICT_MESSAGE = ("Cannot complete request because of a conflicting operation (e.g. "
                    "worker rebalance)")
#: Request headers relayed to the target: the body's type, an internal signature, and the
#: user's credentials (as Kafka's RestClient does: the target authenticates them again).
_RELAYED_REQUEST_HEADERS = ("Content-Type", "Authorization", SIGNATURE_HEADER,
                            ALGORITHM_HEADER)
#: Response headers relayed back to the client.
_RELAYED_RESPONSE_HEADERS = ("content-type", "location")
#: A target that keeps failing (a dead leader, until the group notices) is logged at most
#: this often; clients retrying 409s would otherwise flood the log.
_LOG_EVERY_S = 10.0
_last_logged: dict[str, float] = {}
_log_lock = threading.Lock()


def register_forwarding(app: Flask) -> None:
    app.register_error_handler(RequestTargetError, _forward)


def _forward(exc: RequestTargetError) -> Response | tuple[Response, int]:
    flag = request.args.get("forward")
    if flag is not None and flag.strip().lower() == "false":
        return error_response(409, CONFLICT_MESSAGE)
    if not exc.target_url:
        return error_response(409, NO_LEADER_MESSAGE)
    query = [(k, v) for k, v in request.args.items(multi=True) if k != "forward"]
    query.append(("forward", "true" if flag is None else "false"))
    url = (exc.target_url.rstrip("/") + quote(request.path, safe="/")
           + "?" + urlencode(query))
    headers = {h: request.headers[h] for h in _RELAYED_REQUEST_HEADERS if h in request.headers}
    body = request.get_data(cache=True) if request.method in ("POST", "PUT", "PATCH") else None
    log.debug("forwarding %s %s to %s (%s)", printable(request.method),
              printable(request.path), printable(url), exc)
    try:
        answer = http_request(url, request.method, body, headers,
                              ssl_context=current_app.extensions.get(CLIENT_TLS_KEY))
    except ForwardingError as problem:
        if _should_log(exc.target_url):
            log.warning("forwarding %s %s to %s failed: %s", printable(request.method),
                        printable(request.path), exc.target_url, problem)
        return error_response(409, f"Cannot complete request momentarily: the worker at "
                                   f"{exc.target_url} that must handle it did not answer "
                                   f"({problem}); it may have left the cluster, and a "
                                   "rebalance is then underway. Retry the request.")
    if 200 <= answer.status < 300 and exc.after_success is not None:
        exc.after_success()
    response = Response(answer.body, status=answer.status)
    for name in _RELAYED_RESPONSE_HEADERS:
        if name in answer.headers:
            response.headers[name] = answer.headers[name]
    return response


def _should_log(target: str) -> bool:
    now = time.monotonic()
    with _log_lock:
        if now - _last_logged.get(target, -_LOG_EVERY_S) < _LOG_EVERY_S:
            return False
        _last_logged[target] = now
        return True
