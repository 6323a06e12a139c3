"""The JDBC source's ``Prefetcher`` on its own, over plain callables standing in for a
cursor's ``fetchmany`` (no database needed for these paths; the PostgreSQL tests are in
``tests/integration/connectors/jdbc/test_jdbc_prefetch.py``): order and bound, an error
after the batches before it, and a fetch that neither returns nor can be cancelled."""

from __future__ import annotations

import threading
import time

import pytest

from connectors.jdbc.prefetch import Prefetcher, QueryInterrupted


def _batches(*sizes: int):
    it = iter([list(range(n)) for n in sizes] + [[]])
    calls: list[int] = []

    def fetch():
        calls.append(1)
        return next(it)

    return fetch, calls


def test_batches_come_in_order_and_at_most_depth_are_read_ahead():
    fetch, calls = _batches(3, 3, 3, 2)
    prefetcher = Prefetcher(fetch, depth=1, name="t")
    prefetcher.start()
    deadline = time.monotonic() + 5
    while len(calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert len(calls) == 2  # one batch waiting, the next one fetched and held back
    got = [prefetcher.next_batch() for _ in range(5)]
    assert got == [[0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1], []]
    assert prefetcher.next_batch() == []  # the end stays the end
    prefetcher.close(lambda: None)
    assert not prefetcher.alive


def test_an_error_is_raised_after_the_batches_fetched_before_it():
    results = iter([[1], [2]])

    def fetch():
        try:
            return next(results)
        except StopIteration:
            raise OSError("connection lost") from None

    prefetcher = Prefetcher(fetch, depth=2, name="t")
    prefetcher.start()
    assert prefetcher.next_batch() == [1] and prefetcher.next_batch() == [2]
    with pytest.raises(OSError, match="connection lost"):
        prefetcher.next_batch()
    released: list[str] = []
    prefetcher.close(lambda: released.append("now"))
    assert released == ["now"] and not prefetcher.alive


def test_a_fetch_that_cannot_be_cancelled_leaves_the_release_to_its_thread(monkeypatch):
    monkeypatch.setattr("connectors.jdbc.prefetch._GRACE_S", 0.05)
    monkeypatch.setattr("connectors.jdbc.prefetch._CANCELLED_S", 0.05)
    unblock, fetching, cancelled = threading.Event(), threading.Event(), []
    first = [True]

    def fetch():
        if first[0]:
            first[0] = False
            return [1]
        fetching.set()
        unblock.wait(10)  # a driver call stuck in the network, deaf to cancel
        return [2]

    prefetcher = Prefetcher(fetch, depth=1, name="t", cancel=lambda: cancelled.append(1))
    prefetcher.start()
    assert prefetcher.next_batch() == [1]
    assert fetching.wait(5)
    released: list[str] = []
    started = time.monotonic()
    prefetcher.close(lambda: released.append(threading.current_thread().name))
    assert time.monotonic() - started < 2 and cancelled == [1]
    assert released == [] and prefetcher.alive  # not while the thread holds the cursor
    unblock.set()
    deadline = time.monotonic() + 5
    while prefetcher.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert released == ["jdbc-prefetch-t"]  # released by the thread, once free


def test_waiting_ends_with_query_interrupted_once_the_stop_event_is_set():
    stop, unblock = threading.Event(), threading.Event()
    prefetcher = Prefetcher(lambda: unblock.wait(10) and [], depth=1, name="t",
                            stop=stop)
    prefetcher.start()
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(QueryInterrupted):
        prefetcher.next_batch()
    unblock.set()
    prefetcher.close(lambda: None)
    assert not prefetcher.alive
