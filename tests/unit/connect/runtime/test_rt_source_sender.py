"""SourceSender: a source task's runs produced in order on a thread of their own."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest

from connect.runtime.source_sender import SourceSender


def test_runs_are_produced_in_order_on_the_senders_thread() -> None:
    sender = SourceSender("test-producer")
    done: list[tuple[int, str]] = []
    try:
        for n in range(50):
            sender.submit(lambda n=n: done.append((n, threading.current_thread().name)))
        sender.drain()
    finally:
        sender.close()
    assert [n for n, _ in done] == list(range(50))
    assert {name for _, name in done} == {"test-producer"}


def test_submit_waits_while_depth_runs_wait() -> None:
    sender = SourceSender("test-producer", depth=2)
    release = threading.Event()
    started = threading.Event()

    def blocked() -> None:
        started.set()
        release.wait(10)

    try:
        sender.submit(blocked)
        assert started.wait(5)
        sender.submit(lambda: None)
        sender.submit(lambda: None)  # two wait behind the one being produced
        third = threading.Thread(target=sender.submit, args=(lambda: None,))
        third.start()
        third.join(0.2)
        assert third.is_alive()  # blocked: the queue is full
        release.set()
        third.join(5)
        assert not third.is_alive()
        sender.drain()
    finally:
        release.set()
        sender.close()


def test_a_failed_run_drops_the_runs_behind_it_and_is_raised_in_the_callers_thread() -> None:
    sender = SourceSender("test-producer", depth=3)
    gate = threading.Event()
    done: list[int] = []
    failure = OSError("disk full")

    def fail() -> None:
        gate.wait(5)
        raise failure

    try:
        sender.submit(lambda: done.append(1))
        sender.submit(fail)
        sender.submit(lambda: done.append(3))
        sender.submit(lambda: done.append(4))
        gate.set()
        with pytest.raises(OSError) as raised:
            sender.drain()
        assert raised.value is failure
        with pytest.raises(OSError):
            sender.submit(lambda: done.append(5))
    finally:
        sender.close()
    assert done == [1]


def test_close_drops_queued_runs_waits_for_the_current_one_and_refuses_more() -> None:
    sender = SourceSender("test-producer", depth=3)
    started, release = threading.Event(), threading.Event()
    done: list[int] = []

    def slow() -> None:
        started.set()
        release.wait(5)
        done.append(1)

    sender.submit(slow)
    sender.submit(lambda: done.append(2))
    assert started.wait(5)
    threading.Timer(0.1, release.set).start()
    sender.close()
    assert done == [1]
    with pytest.raises(RuntimeError, match="closed"):
        sender.submit(lambda: None)
    sender.close()  # idempotent


def test_the_context_is_entered_on_the_senders_thread() -> None:
    entered: list[str] = []

    @contextlib.contextmanager
    def context() -> Iterator[None]:
        entered.append(threading.current_thread().name)
        yield

    sender = SourceSender("ctx-producer", context=context)
    try:
        sender.submit(lambda: None)
        sender.drain()
    finally:
        sender.close()
    assert entered == ["ctx-producer"]


def test_depth_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        SourceSender("x", depth=0)
