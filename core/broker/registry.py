"""Which Kafka API each handler serves, at which versions: the broker's dispatch table.

Handlers live one per API in ``core/broker/handlers/`` and register themselves with
``@handles``; ``load_handlers()`` imports every module of that package, so adding an API
is adding a module. The table also feeds the ApiVersions response.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.broker.state import BrokerState, RequestContext

__all__ = ["ApiSpec", "Handler", "all_specs", "handles", "load_handlers", "lookup"]

#: ``async def handler(state, ctx) -> response`` where the response is a kafka-python
#: ``ApiMessage`` of the response class, or ``None`` when no response is sent (Produce with
#: acks=0). Handlers never raise for a client's mistake: they answer with an error code.
Handler = Callable[["BrokerState", "RequestContext"], Awaitable[Any]]


@dataclass(frozen=True)
class ApiSpec:
    """One served API: its key and name, the kafka-python request class, and the versions
    the handler reads (``min_version``..``max_version``), which is also what ApiVersions
    advertises: a version advertised is a version read."""

    api_key: int
    name: str
    request_class: type
    min_version: int
    max_version: int
    handler: Handler


_SPECS: dict[int, ApiSpec] = {}


def handles(request_class: type, *, versions: tuple[int, int]
            ) -> Callable[[Handler], Handler]:
    """Register the decorated coroutine as the handler of ``request_class``'s API."""

    def register(fn: Handler) -> Handler:
        key = request_class.API_KEY
        if key in _SPECS and _SPECS[key].handler is not fn:
            raise RuntimeError(f"API {key} ({request_class.name}) has two handlers")
        low, high = versions
        _SPECS[key] = ApiSpec(key, request_class.name, request_class, low, high, fn)
        return fn

    return register


def lookup(api_key: int) -> ApiSpec | None:
    return _SPECS.get(api_key)


def all_specs() -> list[ApiSpec]:
    return sorted(_SPECS.values(), key=lambda s: s.api_key)


def load_handlers() -> None:
    """Import every module of ``core.broker.handlers`` so their ``@handles`` run."""
    import core.broker.handlers as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
