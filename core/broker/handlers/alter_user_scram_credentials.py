"""AlterUserScramCredentials (key 51, v0): set or delete users' SCRAM credentials (KIP-554).

The client sends a salt and the salted password (never the password); the broker derives
StoredKey and ServerKey from it at once, and only those travel on and are kept. Kafka's
checks (``core.broker.security.scram_changes``): an empty user or too few/many iterations
(4096-16384) is UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
the same user and mechanism twice DUPLICATE_RESOURCE, deleting a missing credential
RESOURCE_NOT_FOUND. A user with any error has none of its changes applied. A single node
stores the accepted changes in one durable write; a cluster node sends them to the active
controller, which checks them against the cluster metadata and commits them there, and
answers once this broker has applied them.
"""

from __future__ import annotations

import asyncio

from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)

from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.security.metadata_store import ControllerRefusal
from core.broker.security.scram import MECHANISMS, ScramCredential, credential_from_salted
from core.broker.security.scram_changes import ScramChange, refused_users
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["alter_user_scram_credentials"]

_Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


def _upsert(change: object) -> ScramChange:
    """The upsertion with its derived keys (empty when they cannot be derived, which the
    checks refuse); the salted password goes no further."""
    name, number = change.name, change.mechanism  # type: ignore[attr-defined]
    salt, salted = bytes(change.salt), bytes(change.salted_password)  # type: ignore[attr-defined]
    iterations = change.iterations  # type: ignore[attr-defined]
    probe = ScramChange(name, number)
    if probe.mechanism_name is None or not salt or not salted:
        return ScramChange(name, number, ScramCredential(salt, b"", b"", iterations))
    hash_name = MECHANISMS[probe.mechanism_name][0]
    return ScramChange(name, number, credential_from_salted(hash_name, salt, salted,
                                                            iterations))


@handles(AlterUserScramCredentialsRequest, versions=(0, 0))
async def alter_user_scram_credentials(state: BrokerState, ctx: RequestContext
                                       ) -> AlterUserScramCredentialsResponse:
    request = ctx.request
    store = state.scram
    deletions = [ScramChange(d.name, d.mechanism) for d in request.deletions]
    upserts = [_upsert(u) for u in request.upsertions]
    users = list(dict.fromkeys(c.name for c in [*deletions, *upserts]))
    errors: dict[str, tuple[int, str | None]] = {}
    if not cluster_allowed(state, ctx, AclOperation.ALTER):
        errors = dict.fromkeys(users, (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                       "altering SCRAM credentials needs ALTER on the cluster"))
    elif state.metadata_security is not None:  # a cluster: the controller decides
        try:
            errors = await state.metadata_security.alter_scram(deletions, upserts)
        except ControllerRefusal as exc:
            errors = dict.fromkeys(users, (exc.code, str(exc)))
    elif store is None:
        errors = dict.fromkeys(users, (ErrorCode.UNSUPPORTED_VERSION,
                                       "this broker keeps no SCRAM credentials"))
    else:
        errors = dict(refused_users(deletions, upserts,
                                    lambda user, mechanism: store.get(user, mechanism)
                                    is not None))
        accepted_deletions = [(d.name, d.mechanism_name or "") for d in deletions
                              if d.name not in errors]
        accepted = [(u.name, u.mechanism_name or "", u.credential) for u in upserts
                    if u.name not in errors and u.credential is not None]
        if accepted_deletions or accepted:
            await asyncio.to_thread(store.alter, accepted, accepted_deletions)
    results = [_Result(user=user, error_code=errors.get(user, (ErrorCode.NONE, None))[0],
                       error_message=errors.get(user, (ErrorCode.NONE, None))[1])
               for user in users]
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
