"""Group commit: acks=all waits for an fsync that covers its batch, one fsync for many waiters.

Kafka answers acks=all once every in-sync replica has the batch in its page cache and
relies on replication for surviving a power cut. A single Ferry node has no other replica,
so with ``ferry.acks.all.fsync`` (the default) an acks=all produce is answered only once
the partition's data is fsynced up to the batch's end. The fsync runs on a pool thread;
requests that arrive while it runs wait for the next one, which covers all of them, so a
partition never has more than one fsync running and the number of fsyncs per second stays
bounded by the disk's sync latency, not by the number of producers.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

from core.log.log import PartitionLog

__all__ = ["GroupCommit"]

#: Starts ``fn`` on a worker thread and returns a future of its result (called on the loop).
RunInThread = Callable[[Callable[[], None]], "asyncio.Future[None]"]


class GroupCommit:
    """Per partition, at most one fsync in flight; waiters share it (event loop only)."""

    def __init__(self, run_in_thread: RunInThread) -> None:
        self._run_in_thread = run_in_thread
        self._running: weakref.WeakKeyDictionary[PartitionLog, asyncio.Future[None]] = (
            weakref.WeakKeyDictionary())
        self.fsyncs = 0  # fsyncs started (for benchmarks and tests)

    async def wait(self, plog: PartitionLog, end_offset: int) -> None:
        """Return once every offset below ``end_offset`` of ``plog`` is fsynced; raises what
        ``PartitionLog.flush`` raises (StorageError) if the fsync that should cover it fails.
        """
        while plog.flushed_offset < end_offset:
            running = self._running.get(plog)
            # A finished fsync whose callback has not run yet counts as none: awaiting a done
            # future does not yield, and this loop would spin without ever letting it run.
            if running is None or running.done():
                # Nothing in flight: this fsync covers every append made so far, including
                # the caller's (appends finish before their waiter is created).
                running = self._run_in_thread(plog.flush_records)
                self.fsyncs += 1
                self._running[plog] = running
                running.add_done_callback(lambda f, p=plog: self._finished(p, f))
            # A running fsync may have started before the caller's append: then the loop
            # goes round and the caller joins the next one.
            await asyncio.shield(running)

    def _finished(self, plog: PartitionLog, future: asyncio.Future[None]) -> None:
        if self._running.get(plog) is future:
            del self._running[plog]
        if not future.cancelled():
            future.exception()  # retrieved here: every waiter sees it through shield
