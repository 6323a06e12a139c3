"""Reading a server-side cursor's next batches on a thread of its own while the task
turns the current batch into records.

Without it each ``fetchmany`` sends a FETCH and the task waits while the server produces
the batch, so a query's wall time is the task's CPU time plus the server's, in series.
With it the next FETCH is already running (the driver releases the GIL while it waits
for the server): ``bench/jdbc_throughput.py``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Prefetcher", "QueryInterrupted"]

log = logging.getLogger(__name__)

#: How long ``close`` lets a FETCH in flight finish before cancelling it, and then how
#: long it waits for the cancelled FETCH to return.
_GRACE_S = 0.5
_CANCELLED_S = 5.0
#: How often a task waiting for a batch looks at its stop event.
_STOP_CHECK_S = 0.1


class QueryInterrupted(Exception):
    """The task's stop event was set while it waited for the next batch: the query is
    abandoned where the task's offset is (nothing returned is lost, nothing is read
    twice on the next run)."""


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetcher:
    """Calls ``fetch()`` (one batch of rows; an empty one ends the result) on its own
    thread, keeping up to ``depth`` batches ready for ``next_batch`` and one more in
    hand (or being fetched).

    Threading: ``start``, ``next_batch`` and ``close`` are called by the one thread that
    owns the query (the task thread). Between ``start`` and the end of ``close`` only
    the prefetch thread uses the cursor and its connection; ``close`` hands them back.
    An error ``fetch`` raises is raised by the ``next_batch`` that reaches it, after the
    batches fetched before it, and ends the thread.
    """

    def __init__(self, fetch: Callable[[], Sequence[Any]], *, depth: int, name: str,
                 cancel: Callable[[], None] | None = None,
                 stop: threading.Event | None = None) -> None:
        self._fetch = fetch
        self._depth = max(1, depth)
        self._cancel = cancel
        self._stop = stop
        self._cond = threading.Condition()
        # Guarded by _cond: batches fetched and not yet taken (a _Failure last, if any).
        self._ready: deque[Sequence[Any] | _Failure] = deque()
        self._closed = False
        self._done = False
        #: Set by ``close`` when the thread outlived it: run by the thread as it ends.
        self._then: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._run, name=f"jdbc-prefetch-{name}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def next_batch(self) -> Sequence[Any]:
        """The next batch, waiting for it; an empty one at the end of the result.
        Raises what ``fetch`` raised, or ``QueryInterrupted`` when the stop event is set
        while waiting."""
        with self._cond:
            while not self._ready:
                if self._done:
                    return []
                if self._stop is not None and self._stop.is_set():
                    raise QueryInterrupted("the task is stopping")
                self._cond.wait(_STOP_CHECK_S if self._stop is not None else None)
            batch = self._ready.popleft()
            self._cond.notify_all()
        if type(batch) is _Failure:
            raise batch.error
        return batch  # type: ignore[return-value]

    def close(self, then: Callable[[], None]) -> None:
        """End the thread, then call ``then`` (which closes the cursor and connection).
        A FETCH still running after a short grace is cancelled (``cancel``); should the
        thread still not end, ``then`` is left to it, to run when its call returns:
        never two threads on one connection, and ``close`` never hangs."""
        with self._cond:
            self._closed = True
            self._ready.clear()
            self._cond.notify_all()
        if self._thread.ident is not None:
            self._thread.join(_GRACE_S)
            if self._thread.is_alive() and self._cancel is not None:
                try:
                    self._cancel()
                except Exception:  # best effort: the join below bounds it
                    log.debug("cancelling %s failed", self._thread.name, exc_info=True)
                self._thread.join(_CANCELLED_S)
        with self._cond:
            if self._thread.ident is not None and not self._done:
                log.warning("%s: a FETCH did not return within %.1f s of closing the "
                            "query; its connection is closed when it does",
                            self._thread.name, _GRACE_S + _CANCELLED_S)
                self._then = then
                return
        then()

    def _run(self) -> None:
        # The next FETCH is sent as soon as a batch is handed over, not when the task
        # takes it: the thread then waits for the server without the GIL while the task
        # builds records. Waiting for room first would need the GIL to send it, which
        # the task holds until it waits for its next batch: no overlap at all.
        try:
            while not self._closed:
                try:
                    batch: Sequence[Any] | _Failure = self._fetch()
                except BaseException as exc:  # re-raised on the task thread
                    batch = _Failure(exc)
                with self._cond:
                    while len(self._ready) >= self._depth and not self._closed:
                        self._cond.wait()
                    if self._closed:
                        return
                    self._ready.append(batch)
                    self._cond.notify_all()
                if type(batch) is _Failure or not batch:
                    return
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()
                then = self._then
            if then is not None:
                try:
                    then()
                except Exception:  # top of a thread: logged
                    log.warning("closing the query of %s failed", self._thread.name,
                                exc_info=True)
