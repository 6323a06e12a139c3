"""Rate-limited log lines: a flood of one event costs a few lines, not gigabytes.

A broker under a connection flood or out of file descriptors meets the same failure
thousands of times a second; logging each one fills the disk and burns the CPU the broker
needs to recover. ``RateLimitedLog`` lets the first ``burst`` lines of each kind through,
then at most one per ``interval_s``, and says on that line how many were suppressed, so the
log still shows that it happened, how often, and when it stopped.

``limit_loop_exceptions`` applies the same rule to asyncio's loop exception handler, where
the selector event loop reports ``socket.accept() out of system resource`` (EMFILE) once per
pending connection and per retry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["RateLimitedLog", "limit_loop_exceptions"]

_MAX_KINDS = 1024  # distinct keys remembered; beyond that the oldest are forgotten


class RateLimitedLog:
    """Logs through ``logger``, at most ``burst`` lines per key and then one per
    ``interval_s``. Not thread-safe: one owner (the event loop thread)."""

    def __init__(self, logger: logging.Logger, *, burst: int = 5, interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._burst = burst
        self._interval_s = interval_s
        self._clock = clock
        # key -> [lines in the current window, window start, suppressed since last line]
        self._kinds: dict[str, list[float]] = {}

    def log(self, level: int, key: str, msg: str, *args: object, **kwargs: Any) -> bool:
        """Log ``msg % args`` unless lines of ``key`` are over their rate; True if logged."""
        now = self._clock()
        kind = self._kinds.get(key)
        if kind is None or now - kind[1] >= self._interval_s:
            suppressed = int(kind[2]) if kind is not None else 0
            if len(self._kinds) >= _MAX_KINDS and kind is None:
                self._kinds.pop(next(iter(self._kinds)))
            self._kinds[key] = kind = [0, now, 0]
        else:
            suppressed = 0
        if kind[0] >= self._burst:
            kind[2] += 1
            return False
        kind[0] += 1
        if suppressed:
            msg = f"{msg} ({suppressed} similar lines suppressed in the last " \
                  f"{self._interval_s:.0f} s)"
        self._logger.log(level, msg, *args, **kwargs)
        return True

    def warning(self, key: str, msg: str, *args: object, **kwargs: Any) -> bool:
        return self.log(logging.WARNING, key, msg, *args, **kwargs)

    def error(self, key: str, msg: str, *args: object, **kwargs: Any) -> bool:
        return self.log(logging.ERROR, key, msg, *args, **kwargs)


def limit_loop_exceptions(loop: asyncio.AbstractEventLoop, limiter: RateLimitedLog) -> None:
    """Route ``loop``'s unhandled-exception reports through ``limiter``, one key per
    message (each line that gets through keeps its traceback)."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message") or "unhandled exception in the event loop")
        exc = context.get("exception")
        if not isinstance(exc, BaseException):
            exc = None
        limiter.error(f"loop:{message}", "%s", message, exc_info=exc)

    loop.set_exception_handler(handle)
