"""``create_app(context)``: the Flask app serving Confluent's Schema Registry REST API.

Blueprints parse the request, call one ``SchemaRegistry`` method and serialise its answer
with Confluent's field names and order. Writes go through ``write()``, which runs them on
the leader or forwards them there. Every error leaves as ``{"error_code", "message"}``:
registry errors with Confluent's codes, unknown routes as ``{"error_code":404,
"message":"HTTP 404 Not Found"}``, anything unexpected as 500 (logged).

A request body larger than the ``_schemas`` topic's ``max.message.bytes`` is refused with
413 before it is parsed.

Until the instance has read the ``_schemas`` topic to its end, requests wait a moment and
then get 503 ``{"error_code":50001, ...}`` saying why (``GET /`` always answers).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from core.backends.errors import BackendError
from schema_registry.authorization import Authorizer
from schema_registry.cluster import FORWARDED_HEADER, ForwardedResponse, WriteRouter
from schema_registry.dek import DekRegistry
from schema_registry.errors import NotReadyError, RegistryError
from schema_registry.forwarding import forward_request
from schema_registry.registry import SchemaRegistry
from schema_registry.rest.http import (
    V1_JSON,
    BadRequestError,
    RawPathMiddleware,
    json_response,
    response_type,
)
from schema_registry.rest.response_cache import ResponseCache
from schema_registry.store import SchemaStore

__all__ = ["CONTEXT_KEY", "RestContext", "create_app", "write"]

log = logging.getLogger(__name__)

CONTEXT_KEY = "ferry.schema_registry"
_ALWAYS_SERVED = ("/", "")


@dataclass(frozen=True, slots=True)
class RestContext:
    """What the views need: the registry, the write router and how to reach peers."""

    registry: SchemaRegistry
    router: WriteRouter
    store: SchemaStore
    self_url: str
    cluster_id: str = "schema-registry"
    forward_timeout_s: float = 10.0
    ready_wait_s: float = 2.0
    #: The DEK Registry (``/dek-registry/v1``); None serves those paths as 404.
    dek: DekRegistry | None = None
    #: Per-subject permissions (``registry_authfile``); None lets every user do anything.
    authorizer: Authorizer | None = None
    #: Verifies an ``https://`` leader when writes are forwarded.
    client_tls: ssl.SSLContext | None = None


def create_app(context: RestContext) -> Flask:
    """The REST app over ``context``; the store and router must be started by the caller."""
    from schema_registry.rest import (
        associations,
        compatibility,
        config,
        dek,
        root,
        schemas,
        subjects,
    )

    app = Flask("schema_registry.rest")
    app.url_map.strict_slashes = False
    app.extensions[CONTEXT_KEY] = context
    # Reads depend on both topics: a cached answer is dropped when either reader moves.
    app.wsgi_app = ResponseCache(  # type: ignore[method-assign]
        RawPathMiddleware(app.wsgi_app),
        lambda: (context.store.position,  # type: ignore[arg-type, return-value]
                 context.dek.store.position if context.dek is not None else 0),
        lambda: context.store.ready)
    app.before_request(_check_ready)
    if context.authorizer is not None:
        from schema_registry.rest.access import authorize

        app.before_request(authorize)
    app.before_request(_limit_body)
    app.register_error_handler(RegistryError, _registry_error)
    app.register_error_handler(BackendError, _backend_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)
    for blueprint in (root.bp, subjects.bp, schemas.bp, compatibility.bp, config.bp, dek.bp,
                      associations.bp):
        app.register_blueprint(blueprint)
    return app


def context() -> RestContext:
    from flask import current_app

    return current_app.extensions[CONTEXT_KEY]


def write(local: Callable[[], Any], status: int = 200) -> Response:
    """Run the write ``local`` on the leader (here, or forwarded) and answer with its
    result as JSON, or with the leader's relayed answer."""
    ctx = context()
    forward = None if request.headers.get(FORWARDED_HEADER) else _forwarder(ctx)
    result = ctx.router.run(local, forward)
    if isinstance(result, ForwardedResponse):
        return Response(result.body, status=result.status, content_type=result.content_type)
    return json_response(result, status)


def _forwarder(ctx: RestContext) -> Callable[[str], ForwardedResponse]:
    method = request.method
    target = (request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI")
              or request.full_path)
    body = request.get_data(cache=True)
    headers = {k: v for k, v in request.headers.items()}

    def forward(leader_url: str) -> ForwardedResponse:
        return forward_request(leader_url, method, target, body, headers,
                               timeout_s=ctx.forward_timeout_s,
                               forwarded_by=(FORWARDED_HEADER, ctx.self_url),
                               ssl_context=ctx.client_tls)

    return forward


def _check_ready() -> None:
    if request.path in _ALWAYS_SERVED:
        return
    store = context().store
    if not store.ready and not store.wait_ready(context().ready_wait_s):
        raise NotReadyError(f"The schema registry is not ready: {store.problem}")


def _limit_body() -> None:
    """A body larger than the schemas topic's ``max.message.bytes`` is 413 before it is
    parsed: no record made from it could be stored (and parsing megabytes of schema only
    to fail at the write would tie up a request thread). A body sent without a length is
    cut off at the same size by werkzeug's 413."""
    limit = context().store.max_message_bytes
    length = request.content_length
    if length is not None and length > limit:
        raise BadRequestError(413, f"HTTP 413 Request Entity Too Large: the body has {length} "
                                   f"bytes; the schemas topic accepts records of at most "
                                   f"{limit} bytes (max.message.bytes)")
    request.max_content_length = limit


def _error(status: int, code: int, message: str) -> Response:
    try:
        content_type = response_type()
    except RegistryError:
        content_type = V1_JSON
    return json_response({"error_code": code, "message": message}, status, content_type)


def _registry_error(exc: RegistryError) -> Response:
    return _error(exc.status, exc.error_code, exc.message)


def _backend_error(exc: BackendError) -> Response:
    log.warning("%s %s failed on the log: %s", request.method, request.path, exc)
    return _error(500, 50001, f"Error in the backend data store: {exc}")


def _http_error(exc: HTTPException) -> Response:
    status = exc.code or 500
    return _error(status, status, f"HTTP {status} {exc.name}")


def _unexpected_error(exc: Exception) -> Response:
    log.exception("%s %s failed", request.method, request.path)
    return _error(500, 500, f"Internal Server Error: {type(exc).__name__}: {exc}")
