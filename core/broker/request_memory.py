"""The broker-wide budget for request bytes held in memory (``queued.max.request.bytes``).

Every connection reads a large request into a buffer that grows as its bytes arrive
(``core.protocol.framing``); each growth step is taken from this pool, and the bytes go
back when the request has been handled (or its connection closed). When the pool is spent,
a connection that needs more waits with its socket paused, so TCP pushes back on that
client alone; small requests, read into each connection's fixed buffer, never wait.

As in Kafka's non-strict memory pool, a step is granted while any budget is left, so one
request may overdraw it by a step. One rule goes further, to rule out a deadlock: when the
budget is spent only by requests that are still arriving (nothing complete will give bytes
back), the waiting request closest to complete may overdraw until it is. Memory held for
requests is therefore bounded by the budget plus one request. A client that takes budget
and then stops sending holds it until ``connections.max.idle.ms`` closes its connection.

All methods run on the event loop's thread.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["RequestMemoryPool"]

log = logging.getLogger(__name__)


class RequestMemoryPool:
    """Bytes of requests held in memory, bounded by ``capacity`` (-1: unbounded)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.incomplete = 0  # bytes held by requests still arriving
        self.complete = 0  # bytes held by requests read in full, queued or being handled
        self._overdraft_owner: object | None = None
        # owner -> (called on the loop when its request may try again, bytes it still misses)
        self._waiters: OrderedDict[object, tuple[Callable[[], None], int]] = OrderedDict()

    @property
    def used(self) -> int:
        return self.incomplete + self.complete

    @property
    def waiting(self) -> int:
        """Connections waiting for memory."""
        return len(self._waiters)

    def acquire(self, owner: object, nbytes: int, wake: Callable[[], None], *,
                missing: int) -> bool:
        """Take ``nbytes`` for ``owner``'s request still arriving, which misses ``missing``
        more bytes; False (and ``wake`` is called later, once) if it must wait. ``wake`` is
        never called from inside this call."""
        self._waiters.pop(owner, None)
        if self.capacity < 0 or self.used < self.capacity or owner is self._overdraft_owner:
            self.incomplete += nbytes
            return True
        self._waiters[owner] = (wake, missing)
        if self._overdraft_candidate() is owner:
            del self._waiters[owner]
            self._overdraft_owner = owner
            self._log_overdraft()
            self.incomplete += nbytes
            return True
        self._grant_overdraft()  # someone else may be due for it
        return False

    def charge(self, nbytes: int) -> None:
        """Account for ``nbytes`` a request holds without having asked (bytes that arrived
        with its size prefix)."""
        self.incomplete += nbytes

    def completed(self, owner: object, nbytes: int) -> None:
        """``owner``'s request of ``nbytes`` (all charged while it arrived) is complete."""
        self.incomplete -= nbytes
        self.complete += nbytes
        if owner is self._overdraft_owner:
            self._overdraft_owner = None

    def release(self, *, complete: int = 0, incomplete: int = 0) -> None:
        """Give back bytes of handled requests (``complete``) or of a closed connection's
        unfinished request (``incomplete``), and wake who can use them."""
        self.complete -= complete
        self.incomplete -= incomplete
        self._wake()

    def forget(self, owner: object) -> None:
        """``owner`` closed: it no longer waits nor overdraws."""
        self._waiters.pop(owner, None)
        if owner is self._overdraft_owner:
            self._overdraft_owner = None
            self._wake()

    def _wake(self) -> None:
        while self._waiters and (self.capacity < 0 or self.used < self.capacity):
            _, (wake, _missing) = self._waiters.popitem(last=False)
            wake()  # it acquires again, which may spend the budget and end this loop
        self._grant_overdraft()

    def _overdraft_candidate(self) -> object | None:
        """Who may overdraw now: while only requests still arriving hold the budget and no
        one overdraws yet, the waiting request closest to complete."""
        if not self._waiters or self.complete != 0 or self._overdraft_owner is not None:
            return None
        return min(self._waiters, key=lambda o: self._waiters[o][1])

    def _grant_overdraft(self) -> None:
        owner = self._overdraft_candidate()
        if owner is None:
            return
        wake, _missing = self._waiters.pop(owner)
        self._overdraft_owner = owner
        self._log_overdraft()
        wake()

    def _log_overdraft(self) -> None:
        log.debug("request memory (%d of %d bytes) held only by requests still arriving; "
                  "letting the one closest to complete finish", self.used, self.capacity)
