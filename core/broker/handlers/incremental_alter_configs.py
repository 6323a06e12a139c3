"""IncrementalAlterConfigs (key 44) v0-1: SET, DELETE, APPEND, SUBTRACT on the configs of a
topic, of this broker or of the cluster-wide broker default."""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

from kafka.protocol.admin.configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from core.broker.admin_common import (
    AdminError,
    ConfigResourceType,
    alter_broker,
    alter_each_resource,
    alter_topic,
    check_alterable,
    in_thread,
    storage_error,
)
from core.broker.dynamic_names import LIST_CONFIGS
from core.broker.registry import handles
from core.broker.security.access import AclOperation, check_config_access
from core.broker.state import BrokerState, RequestContext
from core.log.config import BROKER_DEFAULT_NAMES, TOPIC_CONFIGS
from core.log.errors import StorageError
from core.protocol.errors import ErrorCode

__all__ = ["OpType", "handle_incremental_alter_configs"]

_Response = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


class OpType(IntEnum):
    """Kafka's AlterConfigOp.OpType codes."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@handles(IncrementalAlterConfigsRequest, versions=(0, 1))
async def handle_incremental_alter_configs(state: BrokerState, ctx: RequestContext
                                           ) -> IncrementalAlterConfigsResponse:
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
    return IncrementalAlterConfigsResponse(version=version, throttle_time_ms=0,
                                           responses=responses)


async def _alter(state: BrokerState, resource: IncrementalAlterConfigsRequest.AlterConfigsResource,
                 validate_only: bool) -> None:
    check_alterable(state, resource.resource_type, resource.resource_name,
                    [c.name for c in resource.configs])
    name = resource.resource_name
    if resource.resource_type == ConfigResourceType.BROKER:
        ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
        await alter_broker(state, name,
                           lambda current: _apply_ops(current, ops, _effective(state)),
                           validate_only)
        return
    try:
        await in_thread(state, _alter_topic, state, name,
                        [(c.name, c.config_operation, c.value) for c in resource.configs],
                        validate_only)
    except StorageError as exc:
        raise storage_error(exc, name) from exc


def _alter_topic(state: BrokerState, name: str, ops: list[tuple[str, int, str | None]],
                 validate_only: bool) -> None:
    current = state.manager.topic(name).config
    set_configs: dict[str, str] = {}
    delete_configs: list[str] = []
    for key, op, value in ops:
        if op == OpType.DELETE:
            delete_configs.append(key)
            continue
        if op not in tuple(OpType):
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op} for {key}")
        if value is None:
            raise AdminError(ErrorCode.INVALID_CONFIG,
                             f"Null value not supported for topic config: {key}")
        if op == OpType.SET:
            set_configs[key] = value
            continue
        spec = TOPIC_CONFIGS.get(key)
        if spec is None:
            raise AdminError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        if spec.type != "list":
            raise AdminError(ErrorCode.INVALID_CONFIG,
                             f"Config value {OpType(op).name.lower()} is not allowed for config "
                             f"key: {key}")
        # Kafka applies APPEND/SUBTRACT to the current value: the override if there is one,
        # else the default.
        items = list(getattr(current, spec.attribute))
        given = [v.strip() for v in value.split(",") if v.strip()]
        if op == OpType.APPEND:
            items += [v for v in given if v not in items]
        else:
            items = [v for v in items if v not in given]
        set_configs[key] = ",".join(items)
    alter_topic(state, name, set_configs, delete_configs, validate_only)


def _effective(state: BrokerState) -> dict[str, str]:
    """The values APPEND and SUBTRACT start from when a level does not set a list config:
    the broker's topic defaults as in effect, else the config file's."""
    values = dict(state.dynamic.static) if state.dynamic is not None else {}
    defaults = state.manager.defaults
    for broker_name, topic_name in BROKER_DEFAULT_NAMES.items():
        key = TOPIC_CONFIGS[topic_name]
        values[broker_name] = key.render(getattr(defaults, key.attribute))
    return values


def _apply_ops(current: dict[str, str], ops: list[tuple[str, int, str | None]],
               effective: Mapping[str, str]) -> dict[str, str]:
    """A broker level's dynamic configs after ``ops``. APPEND and SUBTRACT work on list
    configs only, starting from the level's value, else the value in effect."""
    new = dict(current)
    for key, op, value in ops:
        if op == OpType.DELETE:
            new.pop(key, None)
            continue
        if op not in tuple(OpType):
            raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op} for {key}")
        if value is None:
            raise AdminError(ErrorCode.INVALID_CONFIG,
                             f"Null value not supported for broker config: {key}")
        if op == OpType.SET:
            new[key] = value
            continue
        if key not in LIST_CONFIGS:
            raise AdminError(ErrorCode.INVALID_CONFIG,
                             f"Config value {OpType(op).name.lower()} is not allowed for config "
                             f"key: {key}")
        base = new.get(key, effective.get(key, ""))
        items = [v.strip() for v in base.split(",") if v.strip()]
        given = [v.strip() for v in value.split(",") if v.strip()]
        if op == OpType.APPEND:
            items += [v for v in given if v not in items]
        else:
            items = [v for v in items if v not in given]
        new[key] = ",".join(items)
    return new
