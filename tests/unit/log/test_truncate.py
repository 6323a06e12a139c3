"""PartitionLog.truncate_to: a follower drops the batches after the point where its log
left the leader's, in the active segment or across segments, and a reopen agrees."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_testing import batch_of, config, open_log, read_all


def _fill(plog, count: int) -> None:
    for i in range(count):
        plog.append(batch_of([(None, f"v{i}".encode())], 1_700_000_000_000 + i))


@pytest.mark.parametrize("segment_bytes", [1 << 20, 200])
def test_truncate_drops_batches_from_the_offset_and_survives_a_reopen(
        tmp_path: Path, segment_bytes: int) -> None:
    cfg = config(segment_bytes=segment_bytes)
    plog = open_log(tmp_path, cfg)
    _fill(plog, 20)
    plog.truncate_to(7)
    assert plog.log_end_offset == 7
    assert [r.value for r in read_all(plog)] == [f"v{i}".encode() for i in range(7)]
    plog.append(batch_of([(None, b"new")], 1_700_000_001_000))
    assert plog.log_end_offset == 8
    plog.close()
    reopened = open_log(tmp_path, cfg)
    assert [r.value for r in read_all(reopened)] == [
        *(f"v{i}".encode() for i in range(7)), b"new"]
    reopened.close()


def test_truncate_past_the_end_changes_nothing_and_to_zero_empties(tmp_path: Path) -> None:
    plog = open_log(tmp_path)
    _fill(plog, 3)
    plog.truncate_to(10)
    assert plog.log_end_offset == 3
    plog.truncate_to(0)
    assert plog.log_end_offset == 0 and read_all(plog) == []
    _fill(plog, 2)
    assert plog.log_end_offset == 2
    plog.close()
