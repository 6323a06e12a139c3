"""Pacer: how many records a rate-limited task may emit now, given a clock."""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["Pacer"]


class Pacer:
    """Schedules record k of this run at ``start + k * interval_s`` (start is the first
    ``allowance()`` call), so the average rate holds exactly over any run, whatever the
    poll timing. A stall is caught up with at most one second's worth of records at
    once, so a paused task does not burst far above the rate when it resumes.

    Pure apart from the injected clock; not thread-safe (owned by one task thread).
    """

    def __init__(self, interval_s: float, clock: Callable[[], float]) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive; use no Pacer for no limit")
        self._interval = interval_s
        self._clock = clock
        self._start: float | None = None
        self._emitted = 0

    def allowance(self) -> int:
        """How many records are due now."""
        now = self._clock()
        if self._start is None:
            self._start = now
        # The tiny epsilon keeps a record due exactly "now" from being lost to
        # floating-point rounding of k * interval.
        due = math.floor((now - self._start) / self._interval + 1e-9) + 1 - self._emitted
        backlog_cap = max(1, math.ceil(1.0 / self._interval))
        if due > backlog_cap:
            # Move the schedule forward so only a second's worth is owed.
            self._start += (due - backlog_cap) * self._interval
            due = backlog_cap
        return max(0, due)

    def emitted(self, count: int) -> None:
        """Record that ``count`` records were emitted."""
        self._emitted += count

    def seconds_until_next(self) -> float:
        """How long until the next record is due (0 if one is due now)."""
        if self._start is None:
            return 0.0
        return max(0.0, self._start + self._emitted * self._interval - self._clock())
