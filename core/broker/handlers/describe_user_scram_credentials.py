"""DescribeUserScramCredentials (key 50, v0): which SCRAM mechanisms each user has (KIP-554).

No users (null or empty) lists every user with a credential. A user asked twice is
DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND, as Kafka answers. Salts and keys
are never returned, only mechanisms and iteration counts.
"""

from __future__ import annotations

from collections import Counter

from kafka.protocol.admin import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

from core.broker.registry import handles
from core.broker.security.access import AclOperation, cluster_allowed
from core.broker.security.scram import MECHANISMS
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["describe_user_scram_credentials"]

_Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
_Info = _Result.CredentialInfo


@handles(DescribeUserScramCredentialsRequest, versions=(0, 0))
async def describe_user_scram_credentials(state: BrokerState, ctx: RequestContext
                                          ) -> DescribeUserScramCredentialsResponse:
    if not cluster_allowed(state, ctx, AclOperation.DESCRIBE):
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message="describing SCRAM credentials needs DESCRIBE on the cluster",
            results=[])
    store = state.scram
    asked = [u.name for u in ctx.request.users or []]
    names = asked or (store.users() if store is not None else [])
    counts = Counter(asked)
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            results.append(_Result(
                user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message="Cannot describe SCRAM credentials for the same user twice "
                              "in a single request", credential_infos=[]))
            continue
        mechanisms = store.mechanisms(name) if store is not None else {}
        if not mechanisms:
            results.append(_Result(
                user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message=f"Attempt to describe a user credential that does not exist: "
                              f"{name}", credential_infos=[]))
            continue
        infos = [_Info(mechanism=MECHANISMS[m][1], iterations=i)
                 for m, i in sorted(mechanisms.items()) if m in MECHANISMS]
        results.append(_Result(user=name, error_code=ErrorCode.NONE, error_message=None,
                               credential_infos=infos))
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=results)
