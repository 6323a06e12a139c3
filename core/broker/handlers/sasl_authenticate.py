"""SaslAuthenticate (key 36, v0-2): one SASL token each way (core.broker.security.authenticator).

A failure is answered after ``connection.failed.authentication.delay.ms`` and the
connection is then closed; v1+ answers carry the session lifetime (KIP-368).
"""

from __future__ import annotations

import asyncio

from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse

from core.broker.registry import handles
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["sasl_authenticate"]


@handles(SaslAuthenticateRequest, versions=(0, 2))
async def sasl_authenticate(state: BrokerState, ctx: RequestContext
                            ) -> SaslAuthenticateResponse:
    auth = ctx.auth
    if auth is None:
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message="no SASL on this "
            "connection", auth_bytes=b"", session_lifetime_ms=0)
    step = auth.authenticate(bytes(ctx.request.auth_bytes or b""))
    if step.failed:
        await asyncio.sleep(auth.failure_delay_s)
    return SaslAuthenticateResponse(
        error_code=step.error, error_message=step.message, auth_bytes=step.token,
        session_lifetime_ms=step.session_lifetime_ms)
