"""ApiVersions (key 18, v0-4): which APIs and versions this broker serves.

Advertised ranges are the versions each handler reads (the handler registry).
A request above v4 is answered as KIP-511 says: a v0-format body with UNSUPPORTED_VERSION
and only the ApiVersions entry, so the client retries with a version both sides know.
v3+ requests name the client software; names Kafka would reject get INVALID_REQUEST.
"""

from __future__ import annotations

import re

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from core.broker.registry import all_specs, handles, lookup
from core.broker.state import BrokerState, RequestContext
from core.protocol.codec import API_VERSIONS_KEY, EncodedResponse
from core.protocol.errors import ErrorCode

__all__ = ["api_versions"]

# ApiVersionsRequest.isValid(): letters and digits, with '-' and '.' inside.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_ApiVersion = ApiVersionsResponse.ApiVersion


@handles(ApiVersionsRequest, versions=(0, 4))
async def api_versions(state: BrokerState, ctx: RequestContext) -> object:
    """Answer ApiVersions; ``ctx.request`` is None for a version above 4 (KIP-511)."""
    if ctx.request is None:
        own = lookup(API_VERSIONS_KEY)
        assert own is not None
        body = ApiVersionsResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=[_ApiVersion(api_key=API_VERSIONS_KEY, min_version=own.min_version,
                                  max_version=own.max_version)],
        ).encode(version=0)
        return EncodedResponse([body])
    request = ctx.request
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name or "")
        and _SOFTWARE.fullmatch(request.client_software_version or "")
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=[],
                                   throttle_time_ms=0)
    keys = [_ApiVersion(api_key=s.api_key, min_version=s.min_version,
                        max_version=s.max_version) for s in all_specs()]
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=keys, throttle_time_ms=0)
