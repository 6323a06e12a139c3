"""AlterClientQuotas (key 49) v0-1: set or remove quotas of user / client-id entities.

Needs ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED per entry). An entry with
an unsupported entity type, key or value is INVALID_REQUEST with the reason; the others
of the request are applied and stored before the answer. ``validate_only`` changes
nothing. On a cluster node the active controller checks and commits the entries to the
cluster metadata; the answer comes once this broker has applied them.
"""

from __future__ import annotations

from kafka.protocol.admin import AlterClientQuotasRequest, AlterClientQuotasResponse

from core.broker.admin_common import in_thread
from core.broker.registry import handles
from core.broker.security.access import AclOperation, client_quotas_refusal
from core.broker.security.metadata_store import ControllerRefusal
from core.broker.security.quotas import QuotaAlteration
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["handle_alter_client_quotas"]

_Entry = AlterClientQuotasResponse.EntryData


@handles(AlterClientQuotasRequest, versions=(0, 1))
async def handle_alter_client_quotas(state: BrokerState, ctx: RequestContext
                                     ) -> AlterClientQuotasResponse:
    version = ctx.api_version
    request = ctx.request
    entries = request.entries

    def entity_of(entry: object) -> list:
        return [_Entry.EntityData(version=version, entity_type=e.entity_type,
                                  entity_name=e.entity_name)
                for e in entry.entity]  # type: ignore[attr-defined]

    def answer(codes: list[tuple[int, str | None]]) -> AlterClientQuotasResponse:
        return AlterClientQuotasResponse(version=version, throttle_time_ms=0, entries=[
            _Entry(version=version, error_code=c, error_message=m, entity=entity_of(e))
            for e, (c, m) in zip(entries, codes, strict=True)])

    refusal = client_quotas_refusal(state, ctx, AclOperation.ALTER_CONFIGS, "altering")
    if refusal is not None:
        return answer([refusal] * len(entries))
    alterations = [
        QuotaAlteration(tuple((e.entity_type, e.entity_name) for e in entry.entity),
                        {op.key: (None if op.remove else op.value) for op in entry.ops})
        for entry in entries]
    if state.metadata_security is not None:  # a cluster: the controller decides
        try:
            return answer(await state.metadata_security.alter_quotas(
                alterations, request.validate_only))
        except ControllerRefusal as exc:
            return answer([(exc.code, str(exc))] * len(entries))
    problems = await in_thread(state, state.quotas.alter, alterations, request.validate_only)
    return answer([(ErrorCode.NONE, None) if p is None else (ErrorCode.INVALID_REQUEST, p)
                   for p in problems])
