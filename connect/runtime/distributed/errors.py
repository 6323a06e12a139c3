"""Errors of distributed mode that tell the REST edge where a request must go instead.

::

    ConnectError (connect.api)
    ├── RequestTargetError            run the request on another worker (``target_url``)
    │   ├── NotLeaderError            only the leader can do this
    │   └── NotAssignedError          only the worker running the connector or task can
    └── InternalRequestSignatureError  an internal request's signature is missing or wrong

The REST layer forwards a request that raised ``RequestTargetError`` to ``target_url``
(at most two hops, Kafka's ``?forward=`` rule) and answers 409 when there is no target;
``InternalRequestSignatureError`` is a 403 (400 for an unsupported algorithm).
"""

from __future__ import annotations

from collections.abc import Callable

from connect.api.errors import ConnectError

__all__ = [
    "InternalRequestSignatureError",
    "NotAssignedError",
    "NotLeaderError",
    "RequestTargetError",
]


class RequestTargetError(ConnectError):
    """The request must run on the worker at ``target_url`` ("" while unknown).

    ``after_success`` (optional) is called by the forwarder once the target answered with
    a success, e.g. to read the config topic so that this worker's next read shows the
    change (read-your-writes through any worker)."""

    def __init__(self, message: str, target_url: str,
                 after_success: Callable[[], None] | None = None) -> None:
        super().__init__(message)
        self.target_url = target_url
        self.after_success = after_success


class NotLeaderError(RequestTargetError):
    """Only the leader may run this request (config topic writes)."""


class NotAssignedError(RequestTargetError):
    """Only the worker running the connector or task may run this request."""


class InternalRequestSignatureError(ConnectError):
    """An internal (worker-to-worker) request whose signature does not match the current
    session key (``status`` 403), or that is unsigned or uses an algorithm this worker
    does not accept (``status`` 400), as in Kafka's DistributedHerder."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status
