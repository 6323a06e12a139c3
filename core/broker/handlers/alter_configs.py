"""AlterConfigs (key 33) v0-2: replace every override of a topic, or every dynamic config
of this broker or of the cluster-wide default (the legacy API)."""

from __future__ import annotations

from kafka.protocol.admin.configs import AlterConfigsRequest, AlterConfigsResponse

from core.broker.admin_common import (
    ConfigResourceType,
    alter_broker,
    alter_each_resource,
    alter_topic,
    check_alterable,
    config_values,
    in_thread,
    storage_error,
)
from core.broker.registry import handles
from core.broker.security.access import AclOperation, check_config_access
from core.broker.state import BrokerState, RequestContext
from core.log.errors import StorageError

__all__ = ["handle_alter_configs"]

_Response = AlterConfigsResponse.AlterConfigsResourceResponse


@handles(AlterConfigsRequest, versions=(0, 2))
async def handle_alter_configs(state: BrokerState, ctx: RequestContext) -> AlterConfigsResponse:
    req = ctx.request
    version = ctx.api_version
    outcomes = await alter_each_resource(
        req.resources, lambda resource: check_config_access(
            state, ctx, resource.resource_type, resource.resource_name,
            AclOperation.ALTER_CONFIGS) or _alter(state, resource, req.validate_only))
    responses = [
        _Response(version=version, error_code=int(error), error_message=message,
                  resource_type=resource.resource_type, resource_name=resource.resource_name)
        for resource, error, message in outcomes
    ]
    return AlterConfigsResponse(version=version, throttle_time_ms=0, responses=responses)


async def _alter(state: BrokerState, resource: AlterConfigsRequest.AlterConfigsResource,
                 validate_only: bool) -> None:
    check_alterable(state, resource.resource_type, resource.resource_name,
                    [c.name for c in resource.configs])
    name = resource.resource_name
    if resource.resource_type == ConfigResourceType.BROKER:
        given = config_values({c.name: c.value for c in resource.configs}, "broker")
        await alter_broker(state, name, lambda _current: given, validate_only)
        return
    new = config_values({c.name: c.value for c in resource.configs}, "topic")
    try:
        await in_thread(state, _replace, state, name, new, validate_only)
    except StorageError as exc:
        raise storage_error(exc, name) from exc


def _replace(state: BrokerState, name: str, new: dict[str, str], validate_only: bool) -> None:
    # The request holds the complete set of overrides: whatever it leaves out goes back
    # to the broker default.
    dropped = [k for k in state.manager.topic(name).overrides if k not in new]
    alter_topic(state, name, new, dropped, validate_only)
