"""Responses decided under the coordinator's lock and delivered after it is released."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from core.group.api import JoinGroupResponse, SyncGroupResponse
from core.group.member import Member

__all__ = ["Outbox"]

log = logging.getLogger(__name__)


class Outbox:
    """Collects ``(callback, response)`` pairs; ``deliver()`` invokes them in order.

    Callbacks run outside the coordinator's lock because a driver may call back into the
    coordinator from one (a SyncGroup right after the JoinGroup answer, say); under the
    lock that would deadlock.
    """

    def __init__(self) -> None:
        self._items: list[tuple[Callable[[Any], None], object]] = []

    def add(self, callback: Callable[[Any], None], response: object) -> None:
        self._items.append((callback, response))

    def join(self, member: Member, response: JoinGroupResponse) -> bool:
        """Answer ``member``'s waiting JoinGroup, if any; returns whether there was one."""
        callback, member.join_callback = member.join_callback, None
        if callback is None:
            return False
        self._items.append((callback, response))
        return True

    def sync(self, member: Member, response: SyncGroupResponse) -> bool:
        """Answer ``member``'s waiting SyncGroup, if any; returns whether there was one."""
        callback, member.sync_callback = member.sync_callback, None
        if callback is None:
            return False
        self._items.append((callback, response))
        return True

    def deliver(self) -> None:
        """Invoke every collected callback. One that raises is logged; the rest still run,
        so a faulty driver callback cannot leave other members waiting."""
        items, self._items = self._items, []
        for callback, response in items:
            try:
                callback(response)
            except Exception:
                log.exception("group coordinator callback %r failed on %r", callback, response)
