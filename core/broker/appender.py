"""Where Produce appends run: on the event loop, or on a thread when they fsync.

An append to the page cache takes microseconds and runs inline: a thread hop would cost
more than it saves. A partition with count-based flushing (``flush.messages``, e.g. 1 for
"fsync every append") may fsync inside ``PartitionLog.append``, which takes from 0.1 to
several milliseconds; those appends run on a small thread pool so that one client's fsync
never stalls every other connection. The choice is made per partition from its config, so
a partition's appends do not mix the two paths (an inline idempotent append would
otherwise wait for the partition's producer lock while a thread fsyncs).

An acks=all produce to a partition with ``ferry.acks.all.fsync`` is answered once an
fsync covers its batch (``core.broker.group_commit``); the fsyncs run on the same pool.

Order: requests of one connection are processed one after the other, so its appends to a
partition keep their order; appends from different connections have no order to keep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from core.broker.group_commit import GroupCommit
from core.broker.producer_state import ProducerStateManager
from core.log.config import LONG_MAX
from core.log.log import AppendInfo, PartitionLog
from core.log.records import BatchHeader

__all__ = ["Appender"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Appender:
    """Runs appends, de-duplicating idempotent producers' batches through ``producers``.

    ``close()`` waits for appends still running on threads; the LogManager may be closed
    only after it.
    """

    def __init__(self, producers: ProducerStateManager, *, threads: int = 8) -> None:
        self._producers = producers
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self.group_commit = GroupCommit(self._run_in_thread)

    @staticmethod
    def waits_for_fsync(plog: PartitionLog, acks: int) -> bool:
        """Whether a produce with ``acks`` to ``plog`` is answered only after an fsync."""
        return acks == -1 and plog.config.acks_all_fsync

    @staticmethod
    def fsyncs(plog: PartitionLog) -> bool:
        """Whether appends to ``plog`` may fsync (count-based flushing is configured)."""
        return plog.config.flush_messages != LONG_MAX

    def append_now(self, plog: PartitionLog, header: BatchHeader,
                   batch: bytearray) -> AppendInfo:
        """Append on the calling thread. Raises what PartitionLog.append and
        ProducerStateManager.append raise."""
        if header.producer_id >= 0:
            return self._producers.append(plog, header, batch)
        return plog.append(batch)

    def append_in_thread(self, plog: PartitionLog, header: BatchHeader,
                         batch: bytearray) -> Awaitable[AppendInfo]:
        """Start the append on the thread pool; await the result (call on the loop)."""
        return self._run_in_thread(self.append_now, plog, header, batch)

    def synced(self, plog: PartitionLog,
               appended: AppendInfo | Awaitable[AppendInfo]) -> Awaitable[AppendInfo]:
        """The append's result once an fsync covers it (group commit); starts now (call on
        the loop). A retried batch answered from the producer state waits the same way,
        since its first attempt may not have been fsynced."""
        async def wait() -> AppendInfo:
            info = appended if isinstance(appended, AppendInfo) else await appended
            await self.group_commit.wait(plog, info.last_offset + 1)
            return info

        return asyncio.ensure_future(wait())

    def _run_in_thread(self, fn: Callable[..., T], *args: object) -> asyncio.Future[T]:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="ferry-append")
        return asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def close(self) -> None:
        """Wait for running appends to finish; later thread appends fail."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
