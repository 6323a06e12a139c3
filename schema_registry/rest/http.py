"""HTTP plumbing shared by the blueprints: content types, JSON, query flags, raw paths.

* **Content types** (Confluent's ``Versions``): requests may be
  ``application/vnd.schemaregistry.v1+json``, ``application/vnd.schemaregistry+json``,
  ``application/json`` or ``application/octet-stream`` (or carry none); anything else is
  415. Responses are v1 unless ``Accept`` prefers the vendor type or plain JSON; an
  ``Accept`` that allows none of them is 406. ``Accept`` is read as leniently as Jersey
  reads it (``accept.negotiate``: the JDK's ``*; q=.2`` is accepted).
* **Subjects containing "/"** arrive as ``%2F``, which WSGI servers decode before routing.
  ``RawPathMiddleware`` rebuilds the path from the raw request URI so that a ``%2F`` (and
  a ``%25``) stays escaped inside its segment; views call ``path_arg`` to unescape it.
* **Booleans** in query strings are true when they say ``true`` in any case (the Python
  client sends ``True``), and ``deleted_only`` is accepted for ``deletedOnly``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, unquote_to_bytes, urlsplit

from flask import Response, current_app, request

from schema_registry.errors import RegistryError
from schema_registry.rest.accept import negotiate
from schema_registry.schemas import NestingError, SchemaError, load_json

__all__ = [
    "ACCEPTED_REQUEST_TYPES",
    "RESPONSE_TYPES",
    "V1_JSON",
    "BadRequestError",
    "RawPathMiddleware",
    "bool_arg",
    "int_arg",
    "json_body",
    "json_response",
    "paginate",
    "path_arg",
    "response_type",
]

V1_JSON = "application/vnd.schemaregistry.v1+json"
VND_JSON = "application/vnd.schemaregistry+json"
PLAIN_JSON = "application/json"
RESPONSE_TYPES = (V1_JSON, VND_JSON, PLAIN_JSON)
#: Confluent's ``@Produces`` qualities (``Versions.java``) for ``negotiate``.
_OFFERS = ((V1_JSON, 1.0), (VND_JSON, 0.9), (PLAIN_JSON, 0.5))
ACCEPTED_REQUEST_TYPES = frozenset((V1_JSON, VND_JSON, PLAIN_JSON, "application/octet-stream"))


class BadRequestError(RegistryError):
    """A request the HTTP layer rejects before any registry logic (status = error_code)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = status


class RawPathMiddleware:
    """Route on the raw request path, keeping ``%2F`` and ``%25`` escaped in a segment.

    Uses ``REQUEST_URI`` (waitress, werkzeug) or ``RAW_URI`` (gunicorn); without either
    the server's decoded ``PATH_INFO`` is used as is.
    """

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        raw = environ.get("REQUEST_URI") or environ.get("RAW_URI")
        if raw:
            path = urlsplit(raw).path if "://" in raw else raw.split("?", 1)[0]
            segments = [unquote_to_bytes(s).replace(b"%", b"%25").replace(b"/", b"%2F")
                        for s in path.split("/")]
            rebuilt = b"/".join(segments).decode("latin-1")
            script = environ.get("SCRIPT_NAME", "")
            if script and rebuilt.startswith(script):
                rebuilt = rebuilt[len(script):]
            environ["PATH_INFO"] = rebuilt
        return self.app(environ, start_response)


def path_arg(value: str) -> str:
    """A path variable as the client meant it (undoing ``RawPathMiddleware``'s escaping)."""
    return unquote(value) if "%" in value else value


def response_type() -> str:
    """The negotiated response content type; 406 if ``Accept`` allows none."""
    if not request.headers.get("Accept", "").strip():
        return V1_JSON
    best = negotiate(request.headers.get("Accept", ""), _OFFERS)
    if best is None:
        raise BadRequestError(406, "HTTP 406 Not Acceptable")
    return best


def json_response(body: Any, status: int = 200, content_type: str | None = None) -> Response:
    """``body`` as compact JSON (Confluent's field order kept) with the negotiated type."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return Response(text.encode("utf-8"), status=status,
                    content_type=content_type or response_type())


def json_body() -> Any:
    """The request body as JSON (None when empty); 415 for a foreign content type, 400
    for text that is not JSON."""
    content_type = request.mimetype
    if content_type and content_type not in ACCEPTED_REQUEST_TYPES:
        raise BadRequestError(415, "HTTP 415 Unsupported Media Type")
    data = request.get_data(cache=True)
    if not data.strip():
        return None
    try:
        # Strict JSON, as Confluent's reader: NaN/Infinity would be stored and served back
        # as text no JSON parser reads.
        return load_json(data, "request body", allow_nan=False)
    except NestingError as exc:
        raise BadRequestError(400, f"{exc}") from None
    except SchemaError as exc:
        raise BadRequestError(400, f"The request body is not valid JSON: "
                                   f"{exc.__cause__ or exc}") from None


def bool_arg(name: str, *aliases: str, default: bool = False) -> bool:
    """A boolean query parameter, case-insensitive (``True``, ``true``, ``TRUE``)."""
    for key in (name, *aliases):
        value = request.args.get(key)
        if value is not None:
            return value.strip().lower() == "true"
    return default


def int_arg(name: str, default: int) -> int:
    """An integer query parameter; missing or malformed gives ``default``."""
    value = request.args.get(name)
    try:
        return default if value is None else int(value)
    except ValueError:
        return default


def paginate(items: Iterable[Any]) -> list[Any]:
    """Apply ``offset`` and ``limit`` (negative or 0: no limit) to ``items``."""
    result = list(items)
    offset = max(int_arg("offset", 0), 0)
    limit = int_arg("limit", -1)
    result = result[offset:]
    return result[:limit] if limit > 0 else result


def extension(name: str) -> Any:
    return current_app.extensions[name]
