"""The checks of AlterUserScramCredentials (KIP-554), in one place for the single node's
store and the cluster's controller.

Kafka's rules, in the order Kafka reports them (the first problem of a user wins, and a
user with any problem has none of its changes applied): an empty user name or too few/many
iterations (4096-16384) or an empty salt or key is UNACCEPTABLE_CREDENTIAL, an unknown
mechanism UNSUPPORTED_SASL_MECHANISM, the same user and mechanism twice DUPLICATE_RESOURCE,
deleting a credential that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.broker.security.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, ScramCredential
from core.protocol.errors import ErrorCode

__all__ = ["MECHANISM_BY_TYPE", "ScramChange", "refused_users"]

#: Kafka's ScramMechanism type number -> mechanism name
MECHANISM_BY_TYPE = {number: name for name, (_, number) in MECHANISMS.items()}


@dataclass(frozen=True)
class ScramChange:
    """One deletion (``credential`` None) or upsertion of a user's credential for the
    mechanism of Kafka type number ``mechanism`` (unknown numbers are kept, to be refused)."""

    name: str
    mechanism: int
    credential: ScramCredential | None = None

    @property
    def mechanism_name(self) -> str | None:
        return MECHANISM_BY_TYPE.get(self.mechanism)

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"name": self.name, "mechanism": self.mechanism}
        c = self.credential
        if c is not None:
            body.update(salt=_b64(c.salt), stored_key=_b64(c.stored_key),
                        server_key=_b64(c.server_key), iterations=c.iterations)
        return body

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ScramChange:
        """Raises KeyError, TypeError or ValueError for a malformed change."""
        credential = None
        if "iterations" in data:
            credential = ScramCredential(
                base64.b64decode(str(data["salt"]), validate=True),
                base64.b64decode(str(data["stored_key"]), validate=True),
                base64.b64decode(str(data["server_key"]), validate=True),
                int(data["iterations"]))  # type: ignore[call-overload]
        return cls(str(data["name"]), int(data["mechanism"]), credential)  # type: ignore[call-overload]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def refused_users(deletions: Sequence[ScramChange], upserts: Sequence[ScramChange],
                  exists: Callable[[str, str], bool]) -> dict[str, tuple[int, str]]:
    """user -> (Kafka error code, message) for every user whose changes are refused;
    ``exists(user, mechanism name)`` says whether a credential is stored."""
    errors: dict[str, tuple[int, str]] = {}
    seen = Counter((c.name, c.mechanism) for c in [*deletions, *upserts])

    def refuse(user: str, code: int, message: str) -> None:
        errors.setdefault(user, (code, message))

    for change in [*deletions, *upserts]:
        if not change.name:
            refuse(change.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif change.mechanism_name is None:
            refuse(change.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                   f"Unknown SCRAM mechanism {change.mechanism}")
        elif seen[(change.name, change.mechanism)] > 1:
            refuse(change.name, ErrorCode.DUPLICATE_RESOURCE,
                   "A user credential cannot be altered twice in the same request")
    for deletion in deletions:
        mechanism = deletion.mechanism_name
        if mechanism and not exists(deletion.name, mechanism):
            refuse(deletion.name, ErrorCode.RESOURCE_NOT_FOUND,
                   "Attempt to delete a user credential that does not exist")
    for upsert in upserts:
        c = upsert.credential
        if c is None:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "No credential given")
        elif c.iterations < MIN_ITERATIONS:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                   f"Too few iterations: at least {MIN_ITERATIONS}")
        elif c.iterations > MAX_ITERATIONS:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                   f"Too many iterations: at most {MAX_ITERATIONS}")
        elif not c.salt or not c.stored_key or not c.server_key:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                   "Salt and salted password must not be empty")
    return errors
