"""The producing side of a worker source task: runs of converted records are produced on
a thread of the task's own, in the order they were submitted, as Kafka Connect's producer
sends a source task's records from its I/O thread.

The task's thread converts the next run while this thread appends the last one: the log's
copy of the bytes (``write(2)``, or a broker round trip with ``kafka://``) runs without the
GIL, on the other core. At most ``depth`` runs wait; ``submit`` blocks beyond that, so the
converted bytes in flight stay bounded (about ``depth`` + 1 runs).

The first failure of a run stops the sender: the runs queued behind it are dropped, never
produced out of order, and ``submit`` and ``drain`` raise that failure in the task's thread.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

__all__ = ["SourceSender"]

log = logging.getLogger(__name__)


class SourceSender:
    def __init__(self, name: str, depth: int = 2, *,
                 context: Callable[[], AbstractContextManager[object]] = nullcontext) -> None:
        """``name`` names the thread; ``context`` is entered on it for its whole life (the
        task's logging context)."""
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        self._name = name
        self._context = context
        self._depth = depth
        self._cond = threading.Condition()
        self._runs: deque[Callable[[], None]] = deque()
        self._busy = False  # a run taken off the queue is being produced
        self._failure: BaseException | None = None
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, run: Callable[[], None]) -> None:
        """Queue ``run`` behind the runs already submitted; waits while ``depth`` runs
        wait. Raises the failure of an earlier run, and ``RuntimeError`` once closed."""
        with self._cond:
            while len(self._runs) >= self._depth and self._failure is None \
                    and not self._closed:
                self._cond.wait()
            self._check()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name,
                                                daemon=True)
                self._thread.start()
            self._runs.append(run)
            self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every submitted run has been produced; raises the first failure."""
        with self._cond:
            while (self._runs or self._busy) and self._failure is None and not self._closed:
                self._cond.wait()
            self._check()

    def close(self, timeout_s: float = 30.0) -> None:
        """Drop the runs not started and wait up to ``timeout_s`` for the one being
        produced. Idempotent."""
        with self._cond:
            self._closed = True
            dropped = len(self._runs)
            self._runs.clear()
            self._cond.notify_all()
            thread = self._thread
        if dropped:
            log.debug("%s closed with %d runs not produced", self._name, dropped)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                log.warning("%s still producing a run %.0f s after close", self._name,
                            timeout_s)

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise RuntimeError(f"{self._name} is closed")

    def _loop(self) -> None:
        with self._context():
            self._produce_runs()

    def _produce_runs(self) -> None:
        while True:
            with self._cond:
                while not self._runs and not self._closed:
                    self._cond.wait()
                if not self._runs:
                    return
                run = self._runs.popleft()
                self._busy = True
                self._cond.notify_all()
            try:
                run()
            except BaseException as exc:  # handed to the task's thread, which fails
                with self._cond:
                    self._failure = exc
                    self._runs.clear()
                    self._busy = False
                    self._cond.notify_all()
                return
            with self._cond:
                self._busy = False
                self._cond.notify_all()
