"""``ferry groups describe`` on a group with a live member.

An embedded log belongs to one process, so the member and the command share this test's
process: ``main`` runs in-process and shares the backend's runtime, as ``ferry up`` hosting
several components does.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.backends import ProducerRecord, open_backend
from core.backends.consumer import Consumer
from core.cli.main import main

pytestmark = pytest.mark.integration


def test_describe_shows_members_assignment_and_lag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"embedded:{tmp_path / 'data'}"
    with open_backend(url) as backend:
        backend.create_topic("events", 2)
        backend.produce("events", [ProducerRecord(value=b"%d" % i, partition=i % 2)
                                   for i in range(6)])
        consumer = Consumer(backend, ["events"], group_id="live", auto_offset_reset="earliest",
                            enable_auto_commit=False, max_poll_records=2, client_id="tester")
        try:
            deadline = time.monotonic() + 30
            while not (records := consumer.poll(500)):
                assert time.monotonic() < deadline, "the member never received records"
            consumer.commit()
            assert main(["groups", "describe", "live", "--log", url]) == 0
        finally:
            consumer.close()
    out = capsys.readouterr().out
    assert "State:      Stable" in out
    assert "Protocol:   consumer (range)" in out
    assert "Members:    1" in out
    lines = out.splitlines()
    member = lines[lines.index(next(x for x in lines if x.startswith("MEMBER-ID"))) + 1].split()
    assert member[1:] == ["tester", member[2], "events-0,events-1"]
    rows = {line.split()[2]: line.split() for line in out.splitlines()
            if line.startswith("live ")}
    # The commit covers every assigned partition at its position (its start if unread).
    committed = {0: 0, 1: 0}
    for record in records:
        committed[record.partition] = record.offset + 1
    for partition, position in committed.items():
        row = rows[str(partition)]
        assert row[1] == "events"
        assert row[3:6] == [str(position), "3", str(3 - position)]
        assert row[6] == member[0] and row[8] == "tester"
