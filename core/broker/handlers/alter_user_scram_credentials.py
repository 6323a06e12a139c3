"""AlterUserScramCredentials (key 51, v0): set or delete users' SCRAM credentials (KIP-554).

The client sends a salt and the salted password (never the password); the broker keeps
StoredKey and ServerKey derived from it. Checks are Kafka's: an empty user or too few/many
iterations (4096-16384) is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
UNSUPPORTED_SASL_MECHANISM, the same user and mechanism twice DUPLICATE_RESOURCE, deleting
a missing credential RESOURCE_NOT_FOUND. A user with any error has none of its changes
applied; the accepted changes are stored in one durable write.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from kafka.protocol.admin import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)

from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.security.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted,
)
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["alter_user_scram_credentials"]

_Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_BY_TYPE = {number: name for name, (_, number) in MECHANISMS.items()}


@handles(AlterUserScramCredentialsRequest, versions=(0, 0))
async def alter_user_scram_credentials(state: BrokerState, ctx: RequestContext
                                       ) -> AlterUserScramCredentialsResponse:
    request = ctx.request
    store = state.scram
    errors: dict[str, tuple[int, str]] = {}
    seen = Counter((c.name, c.mechanism) for c in [*request.deletions, *request.upsertions])

    def refuse(user: str, code: int, message: str) -> None:
        errors.setdefault(user, (code, message))

    if not cluster_allowed(state, ctx, AclOperation.ALTER):
        for change in [*request.deletions, *request.upsertions]:
            refuse(change.name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                   "altering SCRAM credentials needs ALTER on the cluster")
    for change in [*request.deletions, *request.upsertions]:
        if not change.name:
            refuse(change.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif change.mechanism not in _BY_TYPE:
            refuse(change.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                   f"Unknown SCRAM mechanism {change.mechanism}")
        elif seen[(change.name, change.mechanism)] > 1:
            refuse(change.name, ErrorCode.DUPLICATE_RESOURCE,
                   "A user credential cannot be altered twice in the same request")
    for deletion in request.deletions:
        mechanism = _BY_TYPE.get(deletion.mechanism)
        if mechanism and (store is None or store.get(deletion.name, mechanism) is None):
            refuse(deletion.name, ErrorCode.RESOURCE_NOT_FOUND,
                   "Attempt to delete a user credential that does not exist")
    for upsert in request.upsertions:
        if upsert.iterations < MIN_ITERATIONS:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                   f"Too few iterations: at least {MIN_ITERATIONS}")
        elif upsert.iterations > MAX_ITERATIONS:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                   f"Too many iterations: at most {MAX_ITERATIONS}")
        elif not upsert.salt or not upsert.salted_password:
            refuse(upsert.name, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                   "Salt and salted password must not be empty")
    users = list(dict.fromkeys(c.name for c in [*request.deletions, *request.upsertions]))
    if store is None:
        for user in users:
            refuse(user, ErrorCode.UNSUPPORTED_VERSION, "this broker keeps no SCRAM credentials")
    deletions = [(d.name, _BY_TYPE[d.mechanism]) for d in request.deletions
                 if d.name not in errors]
    upserts: list[tuple[str, str, ScramCredential]] = []
    for u in request.upsertions:
        if u.name in errors:
            continue
        mechanism = _BY_TYPE[u.mechanism]
        upserts.append((u.name, mechanism, credential_from_salted(
            MECHANISMS[mechanism][0], bytes(u.salt), bytes(u.salted_password), u.iterations)))
    if store is not None and (deletions or upserts):
        await asyncio.to_thread(store.alter, upserts, deletions)
    results = [_Result(user=user, error_code=errors.get(user, (ErrorCode.NONE, None))[0],
                       error_message=errors.get(user, (ErrorCode.NONE, None))[1])
               for user in users]
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
