"""group_bridge: coordinator callbacks from any thread resolve the awaiting handler."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core.broker.group_bridge import client_host, join_group, sync_group
from core.group import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse

JOIN = JoinGroupRequest("g", "", None, "consumer", [("range", b"")], 10_000, 30_000)
SYNC = SyncGroupRequest("g", 1, "m")


class StubCoordinator:
    """Keeps the callbacks; a test decides when, and on which thread, they fire."""

    def __init__(self, answer_at_once: Any = None) -> None:
        self.callbacks: list[Callable[[Any], None]] = []
        self.answer_at_once = answer_at_once

    def join_group(self, request: JoinGroupRequest, callback: Callable[[Any], None]) -> None:
        self._register(callback)

    def sync_group(self, request: SyncGroupRequest, callback: Callable[[Any], None]) -> None:
        self._register(callback)

    def _register(self, callback: Callable[[Any], None]) -> None:
        if self.answer_at_once is not None:
            callback(self.answer_at_once)  # on the caller's thread, before returning
        else:
            self.callbacks.append(callback)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    errors: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield loop
    if not loop.is_closed():
        loop.close()
    assert errors == []


def test_answer_before_the_call_returns(loop: asyncio.AbstractEventLoop) -> None:
    answer = JoinGroupResponse(0, 1, "consumer", "range", "m", "m")
    got = loop.run_until_complete(join_group(StubCoordinator(answer), loop, JOIN))
    assert got is answer


def test_answer_from_another_thread(loop: asyncio.AbstractEventLoop) -> None:
    stub = StubCoordinator()
    answer = SyncGroupResponse(0, assignment=b"a")

    async def scenario() -> SyncGroupResponse:
        waiting = asyncio.ensure_future(sync_group(stub, loop, SYNC))
        for _ in range(100):  # let the handler reach its await
            if stub.callbacks:
                break
            await asyncio.sleep(0)
        thread = threading.Thread(target=stub.callbacks[0], args=(answer,))
        thread.start()
        try:
            # The bound only keeps a broken bridge from hanging the suite.
            return await asyncio.wait_for(waiting, 10)
        finally:
            thread.join()

    assert loop.run_until_complete(scenario()) is answer


def test_answer_after_the_waiter_was_cancelled(loop: asyncio.AbstractEventLoop) -> None:
    stub = StubCoordinator()

    async def scenario() -> None:
        waiting = asyncio.ensure_future(join_group(stub, loop, JOIN))
        for _ in range(100):
            if stub.callbacks:
                break
            await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        stub.callbacks[0](JoinGroupResponse(27))
        await asyncio.sleep(0)  # run the scheduled resolution: it must not fail

    loop.run_until_complete(scenario())


def test_answer_after_the_loop_closed_is_dropped(loop: asyncio.AbstractEventLoop) -> None:
    stub = StubCoordinator()
    waiting = loop.create_task(join_group(stub, loop, JOIN))
    loop.run_until_complete(asyncio.sleep(0))
    assert stub.callbacks
    waiting.cancel()
    loop.run_until_complete(asyncio.gather(waiting, return_exceptions=True))
    loop.close()
    stub.callbacks[0](JoinGroupResponse(15))  # the broker shut down meanwhile: no error


def test_client_host_is_shown_as_kafka_shows_it() -> None:
    assert client_host("127.0.0.1") == "/127.0.0.1"
    assert client_host("/10.0.0.1") == "/10.0.0.1"
    assert client_host("") == ""
