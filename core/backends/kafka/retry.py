"""Deadlines and retry pacing: every backend call finishes or fails within a bounded time."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from core.backends import errors as be

__all__ = ["Backoff", "Deadline", "RetryableProblem"]


class Deadline:
    """A point in monotonic time that a call must not run past."""

    __slots__ = ("_at", "budget_ms")

    def __init__(self, budget_ms: float) -> None:
        self.budget_ms = budget_ms
        self._at = time.monotonic() + budget_ms / 1000

    def remaining_s(self) -> float:
        return max(0.0, self._at - time.monotonic())

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._at

    def cap_s(self, seconds: float) -> float:
        """``seconds``, shortened so as not to pass the deadline."""
        return min(seconds, self.remaining_s())


class RetryableProblem(Exception):
    """An attempt failed for a reason a later attempt may not have (a broker down, a leader or
    coordinator that moved). ``error`` is what the caller sees if no attempt succeeds."""

    def __init__(self, error: be.BackendError, *, refresh_metadata: bool = False,
                 coordinator_of: str | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.refresh_metadata = refresh_metadata
        self.coordinator_of = coordinator_of


@dataclass
class Backoff:
    """Exponential pauses between attempts (Kafka's retry.backoff.ms / .max.ms), never past
    the deadline; ``stop`` (set on close) cuts a pause short."""

    initial_ms: int
    max_ms: int
    stop: threading.Event = field(default_factory=threading.Event)
    _next_ms: float = 0.0

    def pause(self, deadline: Deadline) -> bool:
        """Sleep before the next attempt; False when the deadline or ``stop`` leaves none."""
        delay = self._next_ms or self.initial_ms
        self._next_ms = min(max(delay * 2, 1), self.max_ms) if self.max_ms else 0
        wait_s = deadline.cap_s(delay / 1000)
        if deadline.expired or self.stop.is_set():
            return False
        if wait_s > 0 and self.stop.wait(wait_s):
            return False
        return not deadline.expired
