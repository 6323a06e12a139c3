"""Applying client quotas to one answered request (KIP-219), for the connection to call.

``throttle`` records the request against its quotas (Produce: the request's bytes against
``producer_byte_rate``; a consumer's Fetch: the answer's bytes against
``consumer_byte_rate``; every request: its handling time against ``request_percentage``)
and writes the resulting delay into the answer's ``throttle_time_ms``. A throttled Fetch is
answered with no data, and its bytes are not counted, as Kafka does. The connection then
mutes itself for the delay (or, for clients that do not throttle themselves, Produce
below v6 and Fetch below v8, holds the answer back that long).
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.broker.security.quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaManager,
)
from core.protocol.codec import EncodedResponse
from core.protocol.fetch_response import encode_fetch_response

if TYPE_CHECKING:
    from core.broker.state import RequestContext

__all__ = ["BusyTimed", "Throttle", "throttle"]

_PRODUCE, _FETCH = 0, 1
_API_VERSIONS = 18


class BusyTimed:
    """Awaits a handler coroutine and adds up the time it ran on the event loop, not the
    time it waited (a long-polling Fetch or a JoinGroup waiting for the rebalance): what
    ``request_percentage`` measures, as Kafka counts request-handler thread time."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self.busy_s = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        sent: Any = None
        error: BaseException | None = None
        while True:
            started = time.perf_counter()
            try:
                yielded = coro.throw(error) if error is not None else coro.send(sent)
            except StopIteration as stop:
                return stop.value
            finally:
                self.busy_s += time.perf_counter() - started
            try:
                sent, error = (yield yielded), None
            except BaseException as exc:  # cancellation goes into the handler
                sent, error = None, exc


@dataclass(frozen=True)
class Throttle:
    """The delay a request earned, and whether the answer waits for it (old clients)."""

    seconds: float
    delay_answer: bool


def throttle(quotas: ClientQuotaManager, ctx: RequestContext, request_bytes: int,
             response: Any, handling_s: float) -> tuple[Any, Throttle | None]:
    """The answer to send (throttle time set) and the throttle, None when within quota."""
    if not quotas.active or ctx.api_key == _API_VERSIONS:
        return response, None
    user, client_id = ctx.principal.name, ctx.client_id
    delay = quotas.record(REQUEST_PERCENTAGE, user, client_id, handling_s * 100)
    fetched = 0
    if ctx.api_key == _PRODUCE:
        delay = max(delay, quotas.record(PRODUCER_BYTE_RATE, user, client_id, request_bytes))
    elif ctx.api_key == _FETCH and getattr(ctx.request, "replica_id", -1) < 0 \
            and isinstance(response, EncodedResponse):
        fetched = sum(memoryview(b).nbytes for b in response.body)
        delay = max(delay, quotas.record(CONSUMER_BYTE_RATE, user, client_id, fetched))
    if delay <= 0:
        return response, None
    ms = round(delay * 1000)
    if ctx.api_key == _FETCH and isinstance(response, EncodedResponse):
        quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, fetched)
        response = EncodedResponse(encode_fetch_response(ctx.api_version, [],
                                                         throttle_time_ms=ms))
    elif response is not None and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, ms)
    old_client = (ctx.api_key == _PRODUCE and ctx.api_version < 6) or \
        (ctx.api_key == _FETCH and ctx.api_version < 8)
    return response, Throttle(delay, old_client)
