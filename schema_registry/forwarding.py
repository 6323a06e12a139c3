"""Forward one HTTP request to the leader and bring its answer back, byte for byte.

The leader's status, body and content type are relayed unchanged, so a follower returns
exactly the leader's error (Karapace issue #1154 is the opposite). Only failures to get
an answer at all become ``ForwardingError`` (50003).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from urllib.parse import urlsplit

from core.http.client import RequestFailedError, send_request
from schema_registry.cluster import ForwardedResponse
from schema_registry.errors import ForwardingError

__all__ = ["forward_request"]

log = logging.getLogger(__name__)

#: Request headers passed on to the leader (hop-by-hop ones and Host are not).
_PASSED_HEADERS = ("Content-Type", "Accept", "Authorization",
                   "Confluent-Accept-Unknown-Properties")


def forward_request(leader_url: str, method: str, path_and_query: str, body: bytes,
                    headers: Mapping[str, str], *, timeout_s: float,
                    forwarded_by: tuple[str, str],
                    ssl_context: ssl.SSLContext | None = None) -> ForwardedResponse:
    """Send ``method path_and_query`` with ``body`` to ``leader_url``; the relayed answer.

    ``forwarded_by`` is the (header name, this instance's URL) marking the request as
    forwarded; ``ssl_context`` verifies an ``https://`` leader. Raises ``ForwardingError``
    if the leader cannot be reached or does not answer within ``timeout_s``.
    """
    parts = urlsplit(leader_url)
    sent = {name: headers[name] for name in _PASSED_HEADERS if name in headers}
    sent[forwarded_by[0]] = forwarded_by[1]
    try:
        response = send_request(f"{parts.scheme}://{parts.netloc}{path_and_query}", method,
                                body or None, sent, timeout_s=timeout_s,
                                ssl_context=ssl_context)
    except RequestFailedError as exc:
        if exc.cause is None:
            raise ForwardingError(f"Cannot forward to the leader: bad leader URL "
                                  f"{leader_url!r}") from None
        raise ForwardingError(f"Error while forwarding the request to the leader "
                              f"{leader_url}: {exc.reason}") from exc.cause
    log.debug("forwarded %s %s to %s: %d", method, path_and_query, leader_url,
              response.status)
    return ForwardedResponse(response.status, response.body,
                             response.headers.get("content-type", "application/json"))
