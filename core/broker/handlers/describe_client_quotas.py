"""DescribeClientQuotas (key 48) v0-1: the quotas of the entities matching the filter.

Needs DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED). Entity names are
null for the default entity (``<default>`` in kafka-configs).
"""

from __future__ import annotations

from kafka.protocol.admin import DescribeClientQuotasRequest, DescribeClientQuotasResponse

from core.broker.registry import handles
from core.broker.security.access import AclOperation, client_quotas_refusal
from core.broker.security.quotas import InvalidQuotaError, QuotaFilter
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_describe_client_quotas"]

_Entry = DescribeClientQuotasResponse.EntryData


@handles(DescribeClientQuotasRequest, versions=(0, 1))
async def handle_describe_client_quotas(state: BrokerState, ctx: RequestContext
                                        ) -> DescribeClientQuotasResponse:
    version = ctx.api_version
    request = ctx.request

    def error(code: int, message: str) -> DescribeClientQuotasResponse:
        return DescribeClientQuotasResponse(version=version, throttle_time_ms=0,
                                            error_code=code, error_message=message,
                                            entries=None)

    refusal = client_quotas_refusal(state, ctx, AclOperation.DESCRIBE_CONFIGS, "describing")
    if refusal is not None:
        return error(*refusal)
    filters = [QuotaFilter(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        found = state.quotas.describe(filters, request.strict)
    except InvalidQuotaError as exc:
        return error(ErrorCode.INVALID_REQUEST, str(exc))
    entries = [
        _Entry(version=version,
               entity=[_Entry.EntityData(version=version, entity_type=t, entity_name=n)
                       for t, n in entity],
               values=[_Entry.ValueData(version=version, key=k, value=v)
                       for k, v in sorted(values.items())])
        for entity, values in found]
    return DescribeClientQuotasResponse(version=version, throttle_time_ms=0,
                                        error_code=ErrorCode.NONE, error_message=None,
                                        entries=entries)
