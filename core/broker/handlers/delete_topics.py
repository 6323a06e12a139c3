"""DeleteTopics (key 20) v1-5: delete topics by name; internal topics are refused."""

from __future__ import annotations

import logging

from kafka.protocol.admin.topics import DeleteTopicsRequest, DeleteTopicsResponse

from core.broker.admin_common import AdminError, duplicates, in_thread, storage_error
from core.broker.registry import handles
from core.broker.security.access import AclOperation, ResourceType, allowed
from core.broker.state import BrokerState, RequestContext
from core.group import OFFSETS_TOPIC
from core.log.errors import StorageError
from core.protocol.errors import ErrorCode

__all__ = ["handle_delete_topics"]

log = logging.getLogger(__name__)

_Result = DeleteTopicsResponse.DeletableTopicResult


@handles(DeleteTopicsRequest, versions=(1, 5))
async def handle_delete_topics(state: BrokerState, ctx: RequestContext) -> DeleteTopicsResponse:
    req = ctx.request
    version = ctx.api_version
    names = list(req.topic_names)
    repeated = duplicates(names)
    results = []
    # The deletion is complete when answered, so timeout_ms has nothing to wait for.
    for name in dict.fromkeys(names):
        try:
            if name in repeated:
                raise AdminError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            if not allowed(state, ctx, AclOperation.DELETE, ResourceType.TOPIC, name):
                raise AdminError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 f"not authorized to delete topic {name}")
            if state.replicas is not None:  # through the controller, for every replica
                await _delete_replicated(state, name)
            else:
                await in_thread(state, _delete, state, name)
        except AdminError as exc:
            results.append(_Result(version=version, name=name, error_code=int(exc.code),
                                   error_message=exc.message))
            continue
        except StorageError as exc:
            err = storage_error(exc, name)
            results.append(_Result(version=version, name=name, error_code=int(err.code),
                                   error_message=err.message))
            continue
        log.info("client %s deleted topic %s", ctx.client_id, name)
        results.append(_Result(version=version, name=name, error_code=ErrorCode.NONE,
                               error_message=None))
    return DeleteTopicsResponse(version=version, throttle_time_ms=0, responses=results)


def _delete(state: BrokerState, name: str) -> None:
    # Kafka's broker would delete __consumer_offsets if asked (only kafka-topics.sh
    # refuses); Ferry's coordinator keeps writing to it, so it is refused here, with the
    # error the embedded backend raises for the same request (InvalidTopicError).
    if state.manager.topic(name).internal:
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic {name} is a Ferry internal topic (it holds the broker's own "
                         "state) and is not allowed to be deleted.")
    state.manager.delete_topic(name)


async def _delete_replicated(state: BrokerState, name: str) -> None:
    """A cluster: the controller removes the topic; every broker deletes its replicas."""
    assert state.replicas is not None
    if name == OFFSETS_TOPIC:
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic {name} is a Ferry internal topic (it holds the broker's own "
                         "state) and is not allowed to be deleted.")
    code = await state.replicas.delete_topic(name)
    if code != ErrorCode.NONE:
        raise AdminError(code, state.replicas.last_error or code.name)
