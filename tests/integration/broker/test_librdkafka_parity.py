"""Broker behaviours librdkafka's own test suite checks, through real clients against a
``ferry broker`` subprocess: transactions refused at once, per-record produce errors,
DeleteRecords, dynamic broker configs, deprecated topic configs, delete-then-create,
authorized operations and the old Produce versions."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException, Producer

pytestmark = pytest.mark.integration

DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def bootstrap(module_broker) -> Iterator[str]:
    yield module_broker.bootstrap


def test_init_transactions_fails_at_once_with_a_fatal_error(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-1",
                         "transaction.timeout.ms": 60000})
    started = time.monotonic()
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(DEADLINE_S)
    # Liveness only: a retriable answer would have used up the whole DEADLINE_S.
    assert time.monotonic() - started < DEADLINE_S
    error = info.value.args[0]
    assert error.fatal()
    assert "transactions are not supported" in error.str()
