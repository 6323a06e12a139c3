"""InitProducerId (key 22, v0-4): producer ids for idempotent producers.

Without a transactional id a producer gets a new id with epoch 0, as Kafka does, also when
it names its current id and epoch (v3+, KIP-360: an idempotent producer resets that way).
Transactions are not supported: a transactional id is answered
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which every client treats as fatal at once.
Handing out an id instead would let the producer start, only to fail at its first
AddPartitionsToTxn, and would silently drop the zombie fencing a transactional id
promises.
"""

from __future__ import annotations

import asyncio
import logging

from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from core.broker.registry import handles
from core.broker.security.access import idempotent_write_allowed
from core.broker.state import BrokerState, RequestContext
from core.protocol.errors import ErrorCode

__all__ = ["init_producer_id"]

log = logging.getLogger(__name__)


@handles(InitProducerIdRequest, versions=(0, 4))
async def init_producer_id(state: BrokerState, ctx: RequestContext) -> InitProducerIdResponse:
    request = ctx.request
    if request.transactional_id is None and not idempotent_write_allowed(state, ctx):
        return _response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.transactional_id is not None:
        log.warning("refused transactional id %r from %s (client id %r): transactions are "
                    "not supported", request.transactional_id, ctx.client_host, ctx.client_id)
        return _response(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if ctx.api_version >= 3 and (request.producer_id == -1) != (request.producer_epoch == -1):
        return _response(ErrorCode.INVALID_REQUEST)
    # Every 1000th id writes (and fsyncs) the next reserved block: off the event loop.
    producer_id = await asyncio.to_thread(state.producers.allocate_producer_id)
    return _response(ErrorCode.NONE, producer_id, 0)


def _response(code: ErrorCode, producer_id: int = -1, epoch: int = -1) -> InitProducerIdResponse:
    return InitProducerIdResponse(throttle_time_ms=0, error_code=code, producer_id=producer_id,
                                  producer_epoch=epoch)
