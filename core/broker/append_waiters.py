"""Long-polling Fetch requests waiting for appends to the partitions they read.

One append listener per partition (registered on first use) wakes every Fetch waiting on
that partition. Listeners fire on the appending thread: on the event loop for inline
appends, on a pool thread for appends that fsync; the latter hop to the loop with
``call_soon_threadsafe``. A partition nobody waits on costs one dictionary lookup per
append.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Sequence

from core.log.log import PartitionLog

__all__ = ["AppendWaiters"]


class _Watch:
    __slots__ = ("waiters",)

    def __init__(self) -> None:
        self.waiters: set[asyncio.Future[None]] = set()


class AppendWaiters:
    """Lets a coroutine wait until one of several partitions is appended to (loop only)."""

    def __init__(self) -> None:
        self._watches: weakref.WeakKeyDictionary[PartitionLog, _Watch] = (
            weakref.WeakKeyDictionary())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    async def wait(self, plogs: Sequence[PartitionLog], timeout_s: float,
                   ready: Callable[[], bool]) -> None:
        """Return after an append to any of ``plogs`` or after ``timeout_s``.

        ``ready`` is checked once the waiter is registered: an append that landed between
        the caller's read and the registration would otherwise be missed.
        """
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop, self._loop_thread = loop, threading.get_ident()
        waiter: asyncio.Future[None] = loop.create_future()
        watches = [self._watch(plog) for plog in plogs]
        for watch in watches:
            watch.waiters.add(waiter)
        try:
            if ready():
                return
            await asyncio.wait_for(waiter, timeout_s)
        except TimeoutError:
            pass
        finally:
            for watch in watches:
                watch.waiters.discard(waiter)

    def notify(self, plog: PartitionLog) -> None:
        """Wake the Fetches waiting on ``plog`` without an append (on the loop): its high
        watermark moved, which is what consumers of a replicated partition wait for."""
        watch = self._watches.get(plog)
        if watch is not None:
            self._wake(watch)

    def _watch(self, plog: PartitionLog) -> _Watch:
        watch = self._watches.get(plog)
        if watch is None:
            watch = self._watches[plog] = _Watch()
            plog.add_append_listener(self._listener(watch))
        return watch

    def _listener(self, watch: _Watch) -> Callable[[int], None]:
        def appended(_end_offset: int) -> None:
            if not watch.waiters:
                return
            loop = self._loop
            if loop is None:
                return
            if threading.get_ident() == self._loop_thread:
                self._wake(watch)
            else:
                loop.call_soon_threadsafe(self._wake, watch)

        return appended

    @staticmethod
    def _wake(watch: _Watch) -> None:
        for waiter in list(watch.waiters):
            if not waiter.done():
                waiter.set_result(None)
