"""Request logs for the REST doors: one line per request, with a request id.

``AccessLog`` wraps a WSGI app: it takes the client's ``X-Request-Id`` (or makes one),
binds it with the method and path to the log context while the app runs (so every line the
request causes carries ``request_id``), answers it back in ``X-Request-Id``, and logs
``GET /connectors 200 3.1 ms from 127.0.0.1`` on its logger once the status is known,
followed by ``user alice`` when authentication (``core.http.auth``) named one.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from core.telemetry import log_context

__all__ = ["REQUEST_ID_HEADER", "AccessLog"]

REQUEST_ID_HEADER = "X-Request-Id"
_SAFE_ID = re.compile(r"^[\w.\-:]{1,128}$")  # a client's id is kept only if it is this tame


class AccessLog:
    """WSGI middleware logging each request on ``logger`` at INFO (``/metrics`` and
    ``/health`` scrapes at DEBUG, so probes do not flood the log)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], logger: logging.Logger) -> None:
        self._app = app
        self._log = logger

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        started = time.perf_counter()
        given = environ.get("HTTP_X_REQUEST_ID", "")
        request_id = given if _SAFE_ID.match(given) else uuid.uuid4().hex[:16]
        method = _printable(environ.get("REQUEST_METHOD", "GET"))
        path = _printable(environ.get("PATH_INFO", "/"))
        status: list[str] = []

        def respond(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status[:] = [line.split(" ", 1)[0]]
            return start_response(line, [*headers, (REQUEST_ID_HEADER, request_id)], exc_info)

        with log_context(request_id=request_id, method=method, path=path):
            try:
                return self._app(environ, respond)
            finally:
                level = logging.DEBUG if path in ("/metrics", "/health", "/health/live") \
                    else logging.INFO
                if self._log.isEnabledFor(level):
                    user = environ.get("REMOTE_USER")
                    self._log.log(level, "%s %s %s %.1f ms from %s%s", method, path,
                                  status[0] if status else "500",
                                  (time.perf_counter() - started) * 1000,
                                  environ.get("REMOTE_ADDR", "-"),
                                  f" user {_printable(user)}" if user else "")


def _printable(text: str) -> str:
    """``text`` with control and line-separator characters escaped (``\\n``, ``\\x1b``):
    a request path must not forge log lines."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)
