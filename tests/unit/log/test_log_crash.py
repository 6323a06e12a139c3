"""Crash test: a writer process is SIGKILLed mid-append; the reopened log is a clean prefix."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from crash_writer import batch_records, config_for
from log_testing import read_all

from core.log.log import PartitionLog

WRITER = Path(__file__).with_name("crash_writer.py")
DEADLINE_S = 60


class Writer:
    """The writer subprocess and the progress it reports."""

    def __init__(self, directory: Path, seed: int, policy: str) -> None:
        self.acked = self.flushed = self.started_at = -1
        self.previous_acked = -1  # the log end reported before ``acked``
        self._changed = threading.Condition()
        self._proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(directory), str(seed), policy],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._proc.stdout:
            kind, value = line.split()
            with self._changed:
                if kind == "S":
                    self.started_at = self.acked = int(value)
                elif kind == "A":
                    self.previous_acked, self.acked = self.acked, int(value)
                else:
                    self.flushed = int(value)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def kill_after(self, records: int) -> None:
        """SIGKILL the writer once it has reported ``records`` more records appended."""
        try:
            with self._changed:
                ok = self._changed.wait_for(
                    lambda: self._proc.poll() is not None
                    or (self.started_at >= 0 and self.acked >= self.started_at + records),
                    timeout=DEADLINE_S,
                )
            assert self._proc.poll() is None, self._proc.stderr.read()
            assert ok, "the writer made no progress"
        finally:
            self._proc.kill()
            self._proc.wait(timeout=DEADLINE_S)
            self._reader.join(timeout=DEADLINE_S)
            self._proc.stdout.close()
            self._proc.stderr.close()


def expected_records(seed: int, count: int) -> tuple[list[tuple], set[int]]:
    """The first ``count`` records the writer produces, and the batch boundaries."""
    records, boundaries, index = [], {0}, 0
    while len(records) < count:
        records += batch_records(seed, index)
        boundaries.add(len(records))
        index += 1
    return records[:count], boundaries


def check_prefix(directory: Path, seed: int, policy: str, writer: Writer) -> int:
    plog = PartitionLog.open(directory, "crash", 0, config_for(policy))
    try:
        end = plog.log_end_offset
        stored = read_all(plog)  # every batch is CRC-checked on the way
        expected, boundaries = expected_records(seed, end)
        assert end in boundaries, f"seed {seed}: log end {end} cuts a batch"
        assert [r.offset for r in stored] == list(range(end))
        assert [(r.key, r.value, list(r.headers), r.timestamp) for r in stored] == expected
        # A killed process loses nothing it wrote: the page cache outlives it. And what it
        # reported as fsynced is certainly there.
        assert end >= writer.acked >= writer.flushed, (seed, end, writer.acked, writer.flushed)
        return end
    finally:
        plog.close()


@pytest.mark.parametrize("policy", ["messages", "ms", "default"])
def test_a_killed_writer_leaves_a_prefix_of_what_it_wrote(tmp_path, policy):
    seed = random.randrange(2**31)
    rng = random.Random(seed)
    directory = tmp_path / "crash-0"
    end = 0
    for cycle in range(3):  # later writers recover the previous one's log and go on
        writer = Writer(directory, seed, policy)
        writer.kill_after(rng.randint(20, 3000))
        assert writer.started_at == end, (seed, cycle)
        end = check_prefix(directory, seed, policy, writer)
        if policy == "messages":
            # Every append returned fsynced; the kill may only fall between the "A" and "F"
            # lines of the last one.
            assert writer.flushed >= writer.previous_acked, (seed, cycle)
    assert end > 0


def test_the_writer_protocol_reports_progress(tmp_path):
    """A short run of the writer, checked without a kill in a random place."""
    seed = 7
    writer = Writer(tmp_path / "p", seed, "messages")
    writer.kill_after(100)
    assert writer.acked >= 100 and writer.flushed >= writer.previous_acked > 0
    check_prefix(tmp_path / "p", seed, "messages", writer)
