"""acks=all waits for a group-commit fsync; a full disk answers KAFKA_STORAGE_ERROR.

In-process broker, real frames. fsyncs are counted (and slowed, so that requests pile up
behind one) by wrapping ``os.fdatasync``; the full disk is tests/unit/log/disk_faults.py.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

from broker_harness import InProcessBroker, produce, records

from core.broker.group_commit import GroupCommit
from core.log.records import encode_batch
from core.protocol.errors import ErrorCode
from tests.unit.log.disk_faults import DiskFaults, Site


def _batch(i: int = 0) -> bytes:
    return bytes(encode_batch(records(2, i)))


def test_acks_all_is_answered_after_an_fsync_and_acks_1_is_not(broker, client) -> None:
    plog = broker.manager.log("t", 0)
    assert produce(client, "t", 0, _batch(), acks=1).error_code == 0
    assert plog.flushed_offset == 0  # acks=1: the page cache only
    result = produce(client, "t", 0, _batch(), acks=-1)
    assert (result.error_code, result.base_offset) == (0, 2)
    assert plog.flushed_offset == plog.log_end_offset == 4


def test_the_setting_can_be_turned_off_per_topic_and_per_broker(tmp_path, broker,
                                                                client) -> None:
    broker.manager.create_topic("fast", 1, {"ferry.acks.all.fsync": "false"})
    assert produce(client, "fast", 0, _batch(), acks=-1).error_code == 0
    assert broker.manager.log("fast", 0).flushed_offset == 0
    other = InProcessBroker(tmp_path / "b2", {"ferry.acks.all.fsync": "false"})
    try:
        other.manager.create_topic("x", 1)
        c = other.client()
        assert produce(c, "x", 0, _batch(), acks=-1).error_code == 0
        assert other.manager.log("x", 0).flushed_offset == 0
        c.close()
    finally:
        other.close()


def test_one_fsync_serves_every_request_waiting_on_it(broker, monkeypatch) -> None:
    fsyncs = []
    real = os.fdatasync

    def slow_fdatasync(fd: int) -> None:
        fsyncs.append(fd)
        time.sleep(0.02)  # a slow disk: requests arrive while it runs
        real(fd)

    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
    clients, per_client = 16, 10
    codes: list[int] = []

    def run(n: int) -> None:
        c = broker.client()
        try:
            for i in range(per_client):
                codes.append(produce(c, "t", 0, _batch(n * 100 + i), acks=-1).error_code)
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert codes == [0] * clients * per_client
    plog = broker.manager.log("t", 0)
    assert plog.flushed_offset == plog.log_end_offset == clients * per_client * 2
    # Without group commit there would be one fsync per request (160).
    assert len(fsyncs) <= clients * per_client // 4, len(fsyncs)


def test_a_full_disk_answers_storage_error_and_keeps_the_connection(broker, client,
                                                                    monkeypatch) -> None:
    faults = DiskFaults(monkeypatch)
    broker.manager.health.probe_interval_s = 0.0
    assert produce(client, "t", 0, _batch(0)).error_code == 0
    faults.arm(Site("write", ".log"))
    for acks in (1, -1):
        result = produce(client, "t", 0, _batch(1), acks=acks)
        assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert "offline" in result.error_message or "rolled back" in result.error_message
    faults.free()
    result = produce(client, "t", 0, _batch(2))  # same connection, space is back
    assert (result.error_code, result.base_offset) == (0, 2)


def test_a_failed_fsync_answers_every_waiter_with_storage_error(broker, client,
                                                                monkeypatch) -> None:
    faults = DiskFaults(monkeypatch)
    faults.arm(Site("fsync", ".log"))
    result = produce(client, "t", 1, _batch(0))
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    faults.free()
    # The partition is not trusted until a restart recovers it; others go on.
    assert produce(client, "t", 1, _batch(1)).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    broker.manager.health.probe_interval_s = 0.0
    broker.manager.health._next_probe = 0.0
    assert produce(client, "t", 0, _batch(1)).error_code == 0


class _FakeLog:
    """Stands in for a PartitionLog (only its flush bookkeeping), so that a test can finish
    an fsync at an exact point of the event loop; counts flushed_offset reads to catch a
    waiter that spins instead of yielding."""

    def __init__(self) -> None:
        self.end = 0
        self._flushed = 0
        self.reads = 0

    @property
    def flushed_offset(self) -> int:
        self.reads += 1
        if self.reads > 1000:
            raise RuntimeError("GroupCommit.wait spins without yielding")
        return self._flushed

    def flush_records(self) -> None:
        self._flushed = self.end


def test_a_waiter_arriving_as_an_fsync_finishes_starts_the_next_one() -> None:
    async def scenario() -> int:
        loop = asyncio.get_running_loop()
        started: list[asyncio.Future[None]] = []

        def run_in_thread(fn):
            future = loop.create_future()
            started.append(future)
            fn()  # the fsync covers what was appended when it started
            if len(started) > 1:  # the first one is finished by the test, at its moment
                loop.call_soon(future.set_result, None)
            return future

        plog = _FakeLog()
        commit = GroupCommit(run_in_thread)
        plog.end = 2
        first = asyncio.ensure_future(commit.wait(plog, 2))
        await asyncio.sleep(0)
        plog.end = 4  # appended after the first fsync started
        started[0].set_result(None)  # done, its callbacks not run yet
        # In the same step (not a new task, which would run after the callbacks): it must
        # start a second fsync rather than spin on the finished one.
        await commit.wait(plog, 4)
        await first
        return len(started)

    assert asyncio.run(scenario()) == 2
