"""Bounded polling for tests: wait until a condition holds, never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["wait_for"]


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 30.0,
             poll: float = 0.05, detail: Callable[[], str] | None = None) -> Any:
    """``cond()``'s first truthy result; AssertionError naming ``what`` after ``timeout``
    seconds (``cond`` is always tried at least once, the last time at or after the
    deadline), followed by ``detail()`` (e.g. the servers' logs) when given."""
    deadline = time.monotonic() + timeout
    while True:
        result = cond()
        if result:
            return result
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout:.0f} s waiting for {what}"
            raise AssertionError(message if detail is None else f"{message}\n{detail()}")
        time.sleep(poll)
