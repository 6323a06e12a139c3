"""Worker-to-worker HTTP: requests one worker sends to another's REST API.

Used by the REST edge to forward a request to the leader or to the worker running a
connector or task, and by the herder to send task configs to the leader (signed, see
``session_keys``). Plain ``http.client``: one connection per request, bounded by
``timeout_s``; an unreachable worker raises ``ForwardingError``.
"""

from __future__ import annotations

import http.client
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from connect.api.errors import ConnectError

__all__ = ["FORWARD_TIMEOUT_S", "ForwardingError", "HttpResponse", "http_request"]

log = logging.getLogger(__name__)

#: How long a forwarded request may take (Kafka's REST request timeout is 90 s).
FORWARD_TIMEOUT_S = 90.0


class ForwardingError(ConnectError):
    """The other worker could not be reached or did not answer in time."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def http_request(url: str, method: str, body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, *,
                 timeout_s: float = FORWARD_TIMEOUT_S,
                 ssl_context: ssl.SSLContext | None = None) -> HttpResponse:
    """Send one request to ``url`` (``http://host:port/path?query``) and read the whole
    answer. Raises ``ForwardingError`` when the worker cannot be reached or answers
    nothing in ``timeout_s``. ``ssl_context`` verifies an ``https://`` worker (and may
    carry this worker's client certificate); None uses the system's CAs."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ForwardingError(f"cannot send a request to {url!r}: not an http(s) URL")
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port,
                                                 timeout=timeout_s, context=ssl_context)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port,
                                                timeout=timeout_s)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, path, body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        data = response.read()
        return HttpResponse(response.status, data,
                            {k.lower(): v for k, v in response.getheaders()})
    except (OSError, http.client.HTTPException) as exc:  # TimeoutError is an OSError
        raise ForwardingError(f"{method} {url} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()
