"""InitProducerId over real frames: fresh ids, no transactions."""

from __future__ import annotations

from broker_harness import WireClient
from kafka.protocol.producer import InitProducerIdRequest

from core.protocol.errors import ErrorCode


def test_init_producer_id(client: WireClient) -> None:
    ids = [client.call(InitProducerIdRequest(transactional_id=None,
                                             transaction_timeout_ms=100), v)
           for v in range(5)]
    assert [(r.error_code, r.producer_epoch) for r in ids] == [(0, 0)] * 5
    assert len({r.producer_id for r in ids}) == 5
    refused = client.call(InitProducerIdRequest(transactional_id="txn",
                                                transaction_timeout_ms=100), 4)
    assert refused.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
