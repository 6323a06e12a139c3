"""A sink task's consumer poll waits no longer than until its next offset commit is due,
as Kafka's WorkerSinkTask does: an idle task commits on time, not a poll's wait late."""

from __future__ import annotations

import pytest
from rt_test_connectors import REC, Harness, wait_for

from core.backends import ProducerRecord
from core.backends.consumer import Consumer

pytestmark = pytest.mark.integration


def test_an_idle_sink_task_polls_no_longer_than_until_its_next_commit(tmp_path, monkeypatch):
    waits: list[int] = []
    real_poll = Consumer.poll

    def recording_poll(self: Consumer, timeout_ms: int) -> list:
        if self._group_id == "connect-idle":  # the sink task's consumer only
            waits.append(timeout_ms)
        return real_poll(self, timeout_ms)

    monkeypatch.setattr(Consumer, "poll", recording_poll)
    h = Harness(tmp_path / "log", **{"offset.flush.interval.ms": "50"})
    try:
        h.backend.create_topic("quiet", 1)
        h.backend.produce("quiet", [ProducerRecord(value=b'{"n":1}', partition=0)])
        h.create("idle", {"connector.class": "CollectingSink", "topics": "quiet"})
        wait_for(lambda: len(REC.precommits["idle"]) >= 5, "five offset commits")
    finally:
        h.close()
    assert waits and max(waits) <= 50, waits
