"""Runtime errors the REST edge maps to HTTP statuses (see ``connect.runtime.herder``).

::

    ConnectError (connect.api)
    ├── NotFoundError             404 (connect.api)
    ├── AlreadyExistsError        409 (connect.api)
    ├── RebalanceInProgressError  409
    └── BadRequestError           400; ``config_infos`` holds the validation result
"""

from __future__ import annotations

from typing import Any

from connect.api.errors import ConnectError

__all__ = ["BadRequestError", "RebalanceInProgressError"]


class BadRequestError(ConnectError):
    """The request is invalid; for a connector config, ``config_infos`` names each bad key."""

    def __init__(self, message: str, *, config_infos: dict[str, Any] | None = None):
        super().__init__(message)
        self.config_infos = config_infos


class RebalanceInProgressError(ConnectError):
    """The cluster is rebalancing; retry the request."""
