"""SaslHandshake (key 17, v0-1): pick a SASL mechanism (core.broker.security.authenticator).

Exactly v0-1 is advertised (KAFKA-9577: clients pick the highest advertised version).
"""

from __future__ import annotations

import asyncio

from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse

from core.broker.registry import handles
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["sasl_handshake"]


@handles(SaslHandshakeRequest, versions=(0, 1))
async def sasl_handshake(state: BrokerState, ctx: RequestContext) -> SaslHandshakeResponse:
    auth = ctx.auth
    if auth is None:  # a hand-built context (handler tests): no SASL here
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    error, mechanisms = auth.handshake(ctx.request.mechanism, ctx.api_version)
    if error == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        await asyncio.sleep(auth.failure_delay_s)
    return SaslHandshakeResponse(error_code=error, mechanisms=mechanisms)
