"""Worker-to-worker HTTP: requests one worker sends to another's REST API.

Used by the REST edge to forward a request to the leader or to the worker running a
connector or task, and by the herder to send task configs to the leader (signed, see
``session_keys``). The request itself is ``core.http.client``'s (one connection per request, bounded
by ``timeout_s``); an unreachable worker raises ``ForwardingError``.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from connect.api.errors import ConnectError
from core.http.client import HttpResponse, RequestFailedError, send_request

__all__ = ["FORWARD_TIMEOUT_S", "ForwardingError", "HttpResponse", "http_request"]

#: How long a forwarded request may take (Kafka's REST request timeout is 90 s).
FORWARD_TIMEOUT_S = 90.0


class ForwardingError(ConnectError):
    """The other worker could not be reached or did not answer in time."""


def http_request(url: str, method: str, body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, *,
                 timeout_s: float = FORWARD_TIMEOUT_S,
                 ssl_context: ssl.SSLContext | None = None) -> HttpResponse:
    """Send one request to ``url`` (``http://host:port/path?query``) and read the whole
    answer (``core.http.client.send_request``). Raises ``ForwardingError`` when the worker
    cannot be reached or answers nothing in ``timeout_s``. ``ssl_context`` verifies an
    ``https://`` worker (and may carry this worker's client certificate); None uses the
    system's CAs."""
    try:
        return send_request(url, method, body, headers, timeout_s=timeout_s,
                            ssl_context=ssl_context)
    except RequestFailedError as exc:
        if exc.cause is None:
            raise ForwardingError(f"cannot send a request to {url!r}: not an http(s) URL"
                                  ) from None
        raise ForwardingError(f"{method} {url} failed: {exc.reason}") from exc.cause
