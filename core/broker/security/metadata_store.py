"""A cluster node's ACLs, SCRAM credentials and client quotas: the committed metadata.

``MetadataSecurityStore`` is the ``AclStore``, ``QuotaStore`` and ``ScramCredentialStore``
of a cluster node (a single node keeps files, ``core.broker.security.store``): it reads the
metadata image this node has applied, so the authorizer, the SCRAM authenticator and the
quota manager of every broker follow the same committed log, and a replaced node gets them
back by replaying it. Nothing here writes: CreateAcls, DeleteAcls, AlterUserScramCredentials
and AlterClientQuotas, sent to any broker, go to the active controller (``submit``), which
checks and commits them (``core.broker.security.metadata_control``); the broker answers once its
own image has applied the change, so the client's next request to it sees the change.

Until this node has applied the metadata up to its own broker registration (Kafka's
"caught up"), the store says it is not loaded (version None): the authorizer then allows
super users only, rather than judging by an empty ACL set.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from core.broker.security.acl import AclBinding, AclBindingFilter
from core.broker.security.metadata_control import binding_of
from core.broker.security.quotas import QuotaAlteration
from core.broker.security.scram import ScramCredential
from core.broker.security.scram_changes import ScramChange
from core.broker.security.store import QuotaEntity, SecurityStoreError
from core.cluster.image import MetadataImage
from core.protocol.errors import ErrorCode

__all__ = ["ControllerRefusal", "MetadataSecurityStore"]

_NOT_CONTROLLER = 41
_APPLY_WAIT_S = 10.0

#: (Kafka error code, message or None) per item of a request
Result = tuple[int, str | None]


class ControllerRefusal(Exception):
    """The active controller refused the whole request or could not be reached; ``code``
    is the Kafka error code to answer every item with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class MetadataSecurityStore:
    """``image`` is the committed metadata this node applied so far, ``applied`` the log
    index it has applied, ``submit`` sends an operation to the active controller (as
    ``ClusterService.submit``), ``caught_up`` says whether the image has reached this
    node's registration. Reads are safe from any thread (the image's security dicts are
    copy-on-write); the async methods run on the event loop."""

    def __init__(self, image: Callable[[], MetadataImage], applied: Callable[[], int],
                 submit: Callable[..., Awaitable[dict[str, Any]]],
                 caught_up: Callable[[], bool]) -> None:
        self._image = image
        self._applied = applied
        self._submit = submit
        self._caught_up = caught_up
        self._loaded = False

    def _ready(self) -> bool:
        if not self._loaded and self._caught_up():
            self._loaded = True  # the image only grows from here
        return self._loaded

    # -- AclStore -----------------------------------------------------------------------

    def acls_version(self) -> int | None:
        return self._image().acls_version if self._ready() else None

    def load_acls(self) -> list[AclBinding]:
        entries = self._image().acls  # a snapshot: changes replace the dict
        return [binding_of(e) for _, e in sorted(entries.items())]

    def save_acls(self, acls: Sequence[AclBinding]) -> None:
        raise SecurityStoreError("a cluster's ACLs change through the active controller")

    # -- QuotaStore ---------------------------------------------------------------------

    def quotas_version(self) -> int | None:
        return self._image().quotas_version if self._ready() else None

    def load_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        return {e: dict(v) for e, v in self._image().quotas.items()}

    def save_quotas(self, quotas: dict[QuotaEntity, dict[str, float]]) -> None:
        raise SecurityStoreError("a cluster's quotas change through the active controller")

    # -- ScramCredentialStore -----------------------------------------------------------

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        record = self._image().scram.get(user, {}).get(mechanism)
        if record is None:
            return None
        return ScramCredential(record.salt, record.stored_key, record.server_key,
                               record.iterations)

    def mechanisms(self, user: str) -> dict[str, int]:
        return {m: c.iterations for m, c in self._image().scram.get(user, {}).items()}

    def users(self) -> list[str]:
        return sorted(self._image().scram)

    def alter(self, upserts: list[tuple[str, str, ScramCredential]],
              deletions: list[tuple[str, str]]) -> None:
        raise SecurityStoreError("a cluster's SCRAM credentials change through the active "
                                 "controller")

    # -- changes, through the active controller -----------------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[Result]:
        result = await self._change("create_acls", {"bindings": [b.to_json() for b in bindings]})
        return [(int(code), message) for code, message in result["results"]]

    async def delete_acls(self, filters: Sequence[AclBindingFilter]
                          ) -> list[tuple[int, str | None, list[AclBinding]]]:
        result = await self._change("delete_acls", {"filters": [f.to_json() for f in filters]})
        return [(int(code), message, [AclBinding.from_json(b) for b in matched])
                for code, message, matched in result["results"]]

    async def alter_scram(self, deletions: Sequence[ScramChange],
                          upserts: Sequence[ScramChange]) -> dict[str, Result]:
        result = await self._change("alter_scram", {
            "deletions": [d.to_json() for d in deletions],
            "upserts": [u.to_json() for u in upserts]})
        return {str(user): (int(code), message)
                for user, (code, message) in result["results"].items()}

    async def alter_quotas(self, alterations: Sequence[QuotaAlteration], validate_only: bool
                           ) -> list[Result]:
        result = await self._change("alter_quotas", {
            "alterations": [{"entity": [list(p) for p in a.entity], "ops": dict(a.ops)}
                            for a in alterations],
            "validate_only": validate_only})
        return [(int(code), message) for code, message in result["results"]]

    async def _change(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """The controller's result once committed and applied here; ControllerRefusal if
        it refused the request or none answered."""
        reply = await self._submit(op, args)
        code = int(reply.get("error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
        if code == _NOT_CONTROLLER:  # after the retries: no controller answered in time
            raise ControllerRefusal(ErrorCode.REQUEST_TIMED_OUT,
                                    "no active controller answered; try again")
        if code != ErrorCode.NONE:
            raise ControllerRefusal(code, str(reply.get("error_message") or ""))
        result = reply["result"]
        deadline = time.monotonic() + _APPLY_WAIT_S
        while self._applied() < int(result["index"]):
            if time.monotonic() > deadline:
                raise ControllerRefusal(ErrorCode.REQUEST_TIMED_OUT,
                                        "the change is committed but this broker has not "
                                        "applied it yet")
            await asyncio.sleep(0.01)
        return result
