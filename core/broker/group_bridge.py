"""Awaitable JoinGroup and SyncGroup over the group coordinator's callbacks.

The coordinator answers a JoinGroup or SyncGroup through a callback, which runs either on
the calling thread before ``join_group``/``sync_group`` returns, or later on whichever
thread completes the rebalance: another member's request (the event loop) or the
coordinator's ``tick()`` (the broker's ticker thread). Both cases go through
``loop.call_soon_threadsafe``, so the future is only ever touched on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

from core.group import (
    GroupCoordinator,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["client_host", "join_group", "sync_group"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def client_host(host: str) -> str:
    """A peer address as Kafka reports it in DescribeGroups (``InetAddress.toString()``:
    ``/127.0.0.1``), which Kafka's own tools print unchanged."""
    if not host or host.startswith("/"):
        return host
    return f"/{host}"


def _resolve(future: asyncio.Future[T], response: T) -> None:
    # The waiting handler may have been cancelled (its connection closed) in the meantime;
    # the member then stays in the group until its session or the rebalance times out, as
    # in Kafka.
    if not future.done():
        future.set_result(response)


def _callback(loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], what: str
              ) -> Callable[[T], None]:
    def deliver(response: T) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, future, response)
        except RuntimeError:
            # The loop is closed: the broker is shutting down and nobody waits any more.
            log.debug("dropped a %s answer after the event loop closed: %r", what, response)

    return deliver


async def join_group(coordinator: GroupCoordinator, loop: asyncio.AbstractEventLoop,
                     request: JoinGroupRequest) -> JoinGroupResponse:
    """Send ``request`` to the coordinator and wait for its answer (which may take up to
    the group's rebalance timeout)."""
    future: asyncio.Future[JoinGroupResponse] = loop.create_future()
    coordinator.join_group(request, _callback(loop, future, "JoinGroup"))
    return await future


async def sync_group(coordinator: GroupCoordinator, loop: asyncio.AbstractEventLoop,
                     request: SyncGroupRequest) -> SyncGroupResponse:
    """Send ``request`` to the coordinator and wait for its answer (a follower waits for
    the leader's assignment)."""
    future: asyncio.Future[SyncGroupResponse] = loop.create_future()
    coordinator.sync_group(request, _callback(loop, future, "SyncGroup"))
    return await future
