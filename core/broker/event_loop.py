"""The broker's event loop: uvloop where it is installed, asyncio's own loop otherwise.

uvloop's transports, TLS included, are compiled (Cython over libuv), where asyncio's
``SSLProtocol`` runs in Python for every TLS record it reads or writes. librdkafka sends
produce requests in TLS records of a few KB, so on an SSL or SASL_SSL listener asyncio's
loop spends more CPU in that Python code than in the broker's own work; uvloop roughly
halves the broker's CPU per produced byte there (docs/benchmarks.md, the security
section). Plain TCP gains too, less.

uvloop is a runtime dependency on the platforms it supports (not Windows); where it is
missing, or when ``FERRY_EVENT_LOOP=asyncio`` asks for the standard loop (to compare, or
to rule uvloop out when chasing a problem), asyncio's loop runs the same code.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from core.broker.config import BrokerConfigError

__all__ = ["ENV_VAR", "loop_factory", "run"]

log = logging.getLogger(__name__)
T = TypeVar("T")

ENV_VAR = "FERRY_EVENT_LOOP"
_CHOICES = ("uvloop", "asyncio")


def loop_factory() -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The name of the loop to use and a function making one, after ``FERRY_EVENT_LOOP``
    (``uvloop``, the default, or ``asyncio``); BrokerConfigError for any other value."""
    wanted = os.environ.get(ENV_VAR, "").strip().lower() or "uvloop"
    if wanted not in _CHOICES:
        raise BrokerConfigError(f"environment variable {ENV_VAR}={wanted!r}: expected "
                                "uvloop or asyncio", key=ENV_VAR)
    if wanted == "uvloop":
        try:
            import uvloop
        except ImportError:  # not installed (e.g. Windows, which uvloop does not support)
            return "asyncio", asyncio.new_event_loop
        return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop ``loop_factory`` picks."""
    try:
        name, factory = loop_factory()
    except BrokerConfigError:
        main.close()  # never awaited: no "coroutine was never awaited" warning
        raise
    log.info("event loop: %s", name)
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
