"""The broker's shared bounds, without sockets: the request memory pool (grants, waits,
the overdraft that rules out a deadlock), connection quotas and rate-limited log lines."""

from __future__ import annotations

import logging

import pytest

from core.broker.config import BrokerConfig, BrokerConfigError
from core.broker.connection_quotas import ConnectionQuotas, FileDescriptors, parse_overrides
from core.broker.log_limit import RateLimitedLog
from core.broker.request_memory import RequestMemoryPool


class Waiter:
    def __init__(self) -> None:
        self.woken = 0

    def __call__(self) -> None:
        self.woken += 1


def test_the_pool_grants_while_budget_is_left_then_wakes_waiters_in_order() -> None:
    pool = RequestMemoryPool(100)
    a, b, c = object(), object(), object()
    wake_b, wake_c = Waiter(), Waiter()
    assert pool.acquire(a, 60, Waiter(), missing=500)
    pool.completed(a, 60)  # a's request is complete: its bytes come back once handled
    assert pool.acquire(b, 60, wake_b, missing=500)  # 60 < 100: granted, overdraws to 120
    assert not pool.acquire(c, 10, wake_c, missing=5)
    assert pool.waiting == 1 and wake_c.woken == 0  # complete bytes will come back: no overdraft
    pool.release(complete=60)
    assert wake_c.woken == 1 and pool.used == 60


def test_when_only_arriving_requests_hold_the_budget_the_closest_to_complete_may_overdraw(
        ) -> None:
    pool = RequestMemoryPool(100)
    lorises = [object() for _ in range(2)]
    for owner in lorises:
        assert pool.acquire(owner, 50, Waiter(), missing=10_000)
    far, wake_far = object(), Waiter()
    # Nothing complete will give bytes back: the request is let through at once, without
    # its wake-up being called from inside acquire (it would pause after being granted).
    assert pool.acquire(far, 50, wake_far, missing=9_000) and wake_far.woken == 0
    honest, wake_honest = object(), Waiter()
    closer, wake_closer = object(), Waiter()
    assert not pool.acquire(honest, 50, wake_honest, missing=100)  # far overdraws now
    assert not pool.acquire(closer, 50, wake_closer, missing=500)
    pool.forget(far)  # far's client went away: the request closest to complete goes next
    assert (wake_honest.woken, wake_closer.woken) == (1, 0)
    assert pool.acquire(honest, 50, wake_honest, missing=100)
    assert not pool.acquire(closer, 50, wake_closer, missing=500)
    pool.completed(honest, 100)
    assert pool.complete == 100
    pool.release(complete=100)  # handled: its bytes come back
    # Over budget, and again only arriving requests hold it: the next one may overdraw.
    assert wake_closer.woken == 1 and pool.used == 100


def test_an_unbounded_pool_never_waits() -> None:
    pool = RequestMemoryPool(-1)
    assert pool.acquire(object(), 1 << 40, Waiter(), missing=0)


def test_connection_quotas_per_address_overrides_and_file_descriptors() -> None:
    class Fds(FileDescriptors):
        left = 1000

        def headroom(self) -> int:
            return self.left

    fds = Fds()
    fds.limit, fds.reserve = 1024, 128
    now = [0.0]
    quotas = ConnectionQuotas(max_connections=5, max_per_ip=2,
                              overrides={"10.0.0.9": 3}, fds=fds, clock=lambda: now[0])
    assert [quotas.admit("10.0.0.1") for _ in range(3)][:2] == [None, None]
    assert "max.connections.per.ip" in quotas.admit("10.0.0.1")
    assert [quotas.admit("10.0.0.9") for _ in range(3)] == [None, None, None]
    assert "max.connections" in quotas.admit("10.0.0.2")  # 5 open
    quotas.release("10.0.0.9")
    fds.left = 100
    # A count is reused for half a second while far from the limit...
    assert quotas.admit("10.0.0.2") is None
    quotas.release("10.0.0.2")
    now[0] = 1.0  # ...then counted again.
    assert "ulimit -n" in quotas.admit("10.0.0.2")
    assert "ulimit -n" in quotas.admit("10.0.0.2", fd=1000)  # fd 1000: 1,001 open at least
    fds.left = 500
    assert quotas.admit("10.0.0.2") is None and quotas.total == 5


def test_overrides_are_kafkas_host_count_list() -> None:
    assert parse_overrides("127.0.0.1:5, [::1]:7") == {"127.0.0.1": 5, "::1": 7}
    assert list(parse_overrides("localhost:2").values()) == [2]  # resolved to an address
    with pytest.raises(ValueError, match="HOST:COUNT"):
        parse_overrides("127.0.0.1")


def test_connection_and_memory_settings_are_validated_by_name() -> None:
    config = BrokerConfig.parse({})
    assert (config.queued_max_request_bytes, config.max_connections,
            config.connections_max_idle_ms) == (268435456, 2**31 - 1, 600000)
    assert BrokerConfig.parse({"queued.max.request.bytes": "-1"}).queued_max_request_bytes == -1
    for settings, key in [({"queued.max.request.bytes": "0"}, "queued.max.request.bytes"),
                          ({"max.connections.per.ip": "0"}, "max.connections.per.ip"),
                          ({"max.connections.per.ip.overrides": "x"},
                           "max.connections.per.ip.overrides")]:
        with pytest.raises(BrokerConfigError) as info:
            BrokerConfig.parse(settings)
        assert info.value.key == key


def test_repeated_lines_are_rate_limited_and_say_how_many_were_dropped(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limiter = RateLimitedLog(logging.getLogger("test.limit"), burst=3, interval_s=10,
                             clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.limit"):
        logged = [limiter.warning("emfile", "accept failed %d", i) for i in range(1000)]
        assert logged.count(True) == 3
        assert limiter.warning("other", "another kind")  # each kind has its own budget
        now[0] = 11.0
        assert limiter.warning("emfile", "accept failed again")
    assert len(caplog.records) == 5
    assert caplog.records[-1].getMessage() == (
        "accept failed again (997 similar lines suppressed in the last 10 s)")


def test_quotas_follow_the_current_config_as_alter_configs_replaces_it() -> None:
    current = [BrokerConfig.parse({"max.connections.per.ip": "1"})]
    quotas = ConnectionQuotas(max_connections=10, max_per_ip=10)
    quotas.follow(lambda: current[0])
    assert quotas.admit("10.0.0.1") is None
    assert "max.connections.per.ip" in quotas.admit("10.0.0.1")
    current[0] = BrokerConfig.parse({"max.connections.per.ip.overrides": "10.0.0.1:3"})
    assert quotas.admit("10.0.0.1") is None
