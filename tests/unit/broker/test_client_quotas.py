"""Client quotas: Kafka's entity precedence, the sampled rate and the throttle time it
gives, the admin operations and the store."""

from __future__ import annotations

import pytest

from core.broker.security.quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaManager,
    QuotaAlteration,
    QuotaFilter,
    Rate,
)
from core.broker.security.store import FileSecurityStore

U, C = "user", "client-id"


@pytest.fixture
def manager(tmp_path):
    return ClientQuotaManager(FileSecurityStore(tmp_path), samples=11, window_s=1.0)


def set_quota(m: ClientQuotaManager, entity, **values) -> None:
    assert m.alter([QuotaAlteration(tuple(entity), values)], validate_only=False) == [None]


# The eight levels, most specific first, with the value each one sets.
LEVELS = [
    (((U, "alice"), (C, "app")), 1.0),
    (((U, "alice"), (C, None)), 2.0),
    (((U, "alice"),), 3.0),
    (((U, None), (C, "app")), 4.0),
    (((U, None), (C, None)), 5.0),
    (((U, None),), 6.0),
    (((C, "app"),), 7.0),
    (((C, None),), 8.0),
]


def test_entity_precedence_follows_kafka(manager):
    for entity, value in LEVELS:
        set_quota(manager, entity, producer_byte_rate=value)
    # Remove the levels one by one, most specific first: the next one takes over.
    for i, (entity, value) in enumerate(LEVELS):
        found = manager.quota_for("alice", "app", PRODUCER_BYTE_RATE)
        assert found is not None and found[0] == value, f"level {i + 1}"
        set_quota(manager, entity, producer_byte_rate=None)
    assert manager.quota_for("alice", "app", PRODUCER_BYTE_RATE) is None


def test_rates_are_shared_by_the_entity_the_quota_came_from(manager):
    set_quota(manager, [(U, "alice")], producer_byte_rate=1000)
    set_quota(manager, [(C, "app")], producer_byte_rate=1000)
    assert manager.quota_for("alice", "x", PRODUCER_BYTE_RATE)[1] == ("alice", "")
    assert manager.quota_for("bob", "app", PRODUCER_BYTE_RATE)[1] == ("", "app")
    # Two client ids of alice share one user-level rate.
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "one", 5000, now=100.0) == 0
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "two", 10000, now=100.5) > 0


def test_throttle_time_is_kafkas_formula(manager):
    set_quota(manager, [(C, "app")], consumer_byte_rate=1000)
    # 10 000 bytes over a 10 s minimum window is exactly the quota: no throttle.
    assert manager.record(CONSUMER_BYTE_RATE, "ANONYMOUS", "app", 10000, now=50.0) == 0
    # 20 000 bytes: rate 2000/s, (2000 - 1000) / 1000 * 10 s = 10 s.
    delay = manager.record(CONSUMER_BYTE_RATE, "ANONYMOUS", "app", 10000, now=50.0)
    assert delay == pytest.approx(10.0)
    # Another client id has no quota at all.
    assert manager.record(CONSUMER_BYTE_RATE, "ANONYMOUS", "other", 10 ** 9, now=50.0) == 0
    # Once the samples age out the rate is back under the quota.
    assert manager.record(CONSUMER_BYTE_RATE, "ANONYMOUS", "app", 1, now=70.0) == 0


def test_request_percentage_throttle_is_bounded_by_the_window(manager):
    set_quota(manager, [(U, None)], request_percentage=1)
    delay = manager.record(REQUEST_PERCENTAGE, "alice", "c", 500.0, now=10.0)
    assert delay == pytest.approx(1.0)


def test_rate_measures_over_at_least_samples_minus_one_windows():
    rate = Rate(samples=3, window_s=1.0)
    rate.record(100, now=0.0)
    assert rate.measure(0.0) == pytest.approx(50.0)  # 100 over 2 windows
    rate.record(100, now=2.5)
    assert rate.measure(2.5) == pytest.approx(80.0)  # 200 over 2.5 s
    assert rate.measure(10.0) == 0.0  # aged out


def test_describe_filters_and_strict(manager):
    set_quota(manager, [(U, "alice")], producer_byte_rate=10)
    set_quota(manager, [(U, "alice"), (C, "app")], consumer_byte_rate=20)
    set_quota(manager, [(U, None)], producer_byte_rate=30)
    set_quota(manager, [(C, None)], request_percentage=40)
    exact = manager.describe([QuotaFilter(U, 0, "alice")], strict=False)
    assert len(exact) == 2
    strict = manager.describe([QuotaFilter(U, 0, "alice")], strict=True)
    assert strict == [(((U, "alice"),), {PRODUCER_BYTE_RATE: 10.0})]
    defaults = manager.describe([QuotaFilter(U, 1)], strict=False)
    assert defaults == [(((U, None),), {PRODUCER_BYTE_RATE: 30.0})]
    assert len(manager.describe([QuotaFilter(U, 2)], strict=False)) == 3
    assert len(manager.describe([], strict=False)) == 4


def test_invalid_alterations_are_refused_with_a_reason_and_valid_ones_applied(manager):
    problems = manager.alter([
        QuotaAlteration(((U, "a"),), {"producer_byte_rate": -1}),
        QuotaAlteration(((U, "a"),), {"bogus_rate": 1}),
        QuotaAlteration((("ip", "1.2.3.4"),), {"producer_byte_rate": 1}),
        QuotaAlteration(((U, "b"),), {"producer_byte_rate": 5}),
    ], validate_only=False)
    assert "positive" in problems[0] and "bogus_rate" in problems[1] and "ip" in problems[2]
    assert problems[3] is None
    assert manager.quota_for("b", "", PRODUCER_BYTE_RATE)[0] == 5
    assert manager.alter([QuotaAlteration(((U, "c"),), {"producer_byte_rate": 5})],
                         validate_only=True) == [None]
    assert manager.quota_for("c", "", PRODUCER_BYTE_RATE) is None


def test_quotas_survive_a_restart(tmp_path, manager):
    set_quota(manager, [(U, "alice"), (C, None)], producer_byte_rate=123)
    again = ClientQuotaManager(FileSecurityStore(tmp_path))
    assert again.quota_for("alice", "x", PRODUCER_BYTE_RATE)[0] == 123


def _ctx(api_key: int, version: int, request: object = None):
    from types import SimpleNamespace

    from core.broker.state import RequestContext

    return RequestContext(api_key, version, 1, "app", "127.0.0.1:5000", "conn-1",
                          request or SimpleNamespace(replica_id=-1))


def test_a_throttled_fetch_is_answered_empty_with_its_throttle_time(manager):
    from core.broker.security.throttling import throttle
    from core.protocol.codec import EncodedResponse
    from core.protocol.fetch_response import encode_fetch_response

    set_quota(manager, [(C, "app")], consumer_byte_rate=10)
    full = EncodedResponse([b"\0" * 4, b"x" * 5000])
    answer, held = throttle(manager, _ctx(1, 11), 100, full, 0.0)
    assert held is not None and held.seconds > 0 and not held.delay_answer
    ms = round(held.seconds * 1000)
    assert b"".join(answer.body) == b"".join(
        encode_fetch_response(11, [], throttle_time_ms=ms))
    # Fetch v7 clients do not throttle themselves: the broker holds the answer back.
    _, old = throttle(manager, _ctx(1, 7), 100, full, 0.0)
    assert old is not None and old.delay_answer


def test_a_throttled_produce_carries_throttle_time_ms(manager):
    from kafka.protocol.producer import ProduceResponse

    from core.broker.security.throttling import throttle

    set_quota(manager, [(C, "app")], producer_byte_rate=1000)
    response = ProduceResponse(version=9, throttle_time_ms=0, responses=[])
    answer, held = throttle(manager, _ctx(0, 9), 50_000, response, 0.0)
    assert held is not None and answer.throttle_time_ms == round(held.seconds * 1000) > 0
    # Another client id, no quota: untouched.
    other = ProduceResponse(version=9, throttle_time_ms=0, responses=[])
    assert throttle(manager, _other_client(_ctx(0, 9)), 50_000, other, 0.0)[1] is None


def _other_client(ctx):
    from dataclasses import replace

    return replace(ctx, client_id="someone-else")


def test_busy_time_leaves_out_what_the_handler_waited_for():
    import asyncio

    from core.broker.security.throttling import BusyTimed

    async def handler() -> str:
        await asyncio.sleep(0.5)  # a long poll: waiting, not working
        return "answer"

    async def run() -> tuple[str, float]:
        timed = BusyTimed(handler())
        return await timed, timed.busy_s

    answer, busy = asyncio.run(run())
    assert answer == "answer" and busy < 0.25
