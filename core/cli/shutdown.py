"""Turn SIGINT and SIGTERM into a flag that long-running commands check between steps."""

from __future__ import annotations

import signal
import time
from types import FrameType, TracebackType

__all__ = ["ShutdownSignals"]


class ShutdownSignals:
    """While entered, SIGINT and SIGTERM set ``requested`` instead of killing the process.

    The handler only assigns a flag: raising from it could interrupt a backend call halfway
    (a commit, a group leave), and taking a lock in it could deadlock with the interrupted
    main thread. Loops therefore wait in short slices and check ``requested``; the previous
    handlers are restored on exit.
    """

    def __init__(self) -> None:
        self.requested = False
        self.signal_name = ""
        self._previous: dict[int, object] = {}

    def __enter__(self) -> ShutdownSignals:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.requested = True
        self.signal_name = signal.Signals(signum).name

    def wait(self, slice_seconds: float = 0.2) -> None:
        """Block until a shutdown signal arrives (checked every ``slice_seconds``)."""
        while not self.requested:
            time.sleep(slice_seconds)
