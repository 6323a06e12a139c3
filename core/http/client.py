"""One HTTP request from one service instance to another (a follower to its leader).

Connect's workers forward REST requests and send task configs to the leader; registry
followers forward writes to theirs. Both send the same kind of request: plain
``http.client``, one connection per request, bounded by ``timeout_s``, over TLS with the
caller's context for an ``https://`` URL. The caller turns ``RequestFailedError`` into its
own error (Connect's ``ForwardingError``, the registry's 50003).
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["HttpResponse", "RequestFailedError", "send_request"]


class RequestFailedError(Exception):
    """No answer: ``url`` is no ``http(s)://`` URL (``cause`` None), or the other side
    could not be reached or did not answer in time (``cause`` says why)."""

    def __init__(self, url: str, cause: BaseException | None = None) -> None:
        self.url = url
        self.cause = cause
        self.reason = ("not an http(s) URL" if cause is None
                       else f"{type(cause).__name__}: {cause}")
        super().__init__(f"{url}: {self.reason}")


@dataclass(frozen=True)
class HttpResponse:
    """The whole answer; header names in lower case."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def send_request(url: str, method: str, body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, *, timeout_s: float,
                 ssl_context: ssl.SSLContext | None = None) -> HttpResponse:
    """Send one request to ``url`` (``http(s)://host:port/path?query``) and read the whole
    answer. ``ssl_context`` verifies an ``https://`` server (and may carry a client
    certificate); None uses the system's CAs. Raises ``RequestFailedError``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestFailedError(url)
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
        raise RequestFailedError(url, exc) from exc
    finally:
        connection.close()
