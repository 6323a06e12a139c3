"""A cache of whole read responses, in front of Flask.

Every read the registry serves (``GET`` anything, and the lookup ``POST /subjects/{s}``)
is a function of the request and of the registry state, and the state changes only when
the reader applies a record from ``_schemas``, which moves ``SchemaStore.position``. So a
successful answer can be replayed byte for byte to the same request (method, raw URI,
``Accept``, ``Content-Type``, body, and the authenticated user: with per-subject
permissions answers differ by user) for as long as the position has not moved.

Clients read the same few schemas over and over (a deserializer asks for the id of every
record it has not seen; a serializer looks up its schema), and Flask's own routing and
response building cost about three quarters of a read; replaying skips all of it. Only
200 answers are kept, only while the instance is ready, and an answer computed while the
position moved is not kept. The cache is cleared whenever the position moves and holds
at most ``max_entries`` answers.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ResponseCache"]

_Key = tuple[str, str, str, str, bytes, str]
_Answer = tuple[str, list[tuple[str, str]], bytes]


class ResponseCache:
    """WSGI middleware; ``position`` and ``ready`` come from the instance's store."""

    def __init__(self, app: Callable[..., Any], position: Callable[[], int],
                 ready: Callable[[], bool], *, max_entries: int = 10_000) -> None:
        self._app = app
        self._position = position
        self._ready = ready
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self._answers: dict[_Key, _Answer] = {}
        self._at = -1  # the position the answers were computed at

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method = environ.get("REQUEST_METHOD", "")
        uri = environ.get("REQUEST_URI") or environ.get("RAW_URI") or ""
        if not uri or not _cacheable(method, uri):
            return self._app(environ, start_response)
        body = b""
        if method == "POST":
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return self._app(environ, start_response)
            body = environ["wsgi.input"].read(length) if length > 0 else b""
            environ["wsgi.input"] = io.BytesIO(body)  # the app reads it again on a miss
        key = (method, uri, environ.get("HTTP_ACCEPT", ""), environ.get("CONTENT_TYPE", ""),
               body, environ.get("REMOTE_USER", ""))
        position = self._position()
        with self._lock:
            if self._at != position:
                self._answers.clear()
                self._at = position
            answer = self._answers.get(key)
        if answer is not None:
            status, headers, data = answer
            start_response(status, headers)
            return [data]
        captured: list[Any] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured[:] = [status, headers]
            return start_response(status, headers, exc_info) if exc_info else \
                start_response(status, headers)

        result = self._app(environ, capture)
        if not captured or not captured[0].startswith("200") or not self._ready():
            return result
        try:
            data = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        with self._lock:
            if self._at == position == self._position():
                if len(self._answers) >= self._max_entries:
                    self._answers.clear()
                self._answers[key] = (captured[0], list(captured[1]), data)
        return [data]


def _cacheable(method: str, uri: str) -> bool:
    """Reads only: any GET, and ``POST /subjects/{s}`` (lookup; registration is
    ``POST /subjects/{s}/versions``, compatibility checks are reads but rare)."""
    if method == "GET":
        return True
    if method != "POST":
        return False
    path = uri.split("?", 1)[0]
    if "://" in path:
        path = "/" + path.split("://", 1)[1].split("/", 1)[-1]
    parts = path.strip("/").split("/")
    return len(parts) == 2 and parts[0] == "subjects"
