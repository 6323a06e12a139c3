"""The leader-epoch cache: Kafka's end offset per epoch, the Fetch divergence check, and
the leader-epoch-checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.broker.replication.leader_epoch import (
    UNDEFINED,
    EpochEntry,
    LeaderEpochCache,
    LeaderEpochCheckpointError,
    diverging_epoch,
)


def _cache() -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in [(0, 0), (2, 10), (5, 25)]:
        assert cache.assign(epoch, start)
    return cache


def test_end_offsets_per_epoch_as_kafka_answers_offset_for_leader_epoch():
    cache = _cache()
    assert cache.end_offset_for(0, 40) == (0, 10)
    assert cache.end_offset_for(1, 40) == (0, 10)  # unknown epoch: the largest below it
    assert cache.end_offset_for(2, 40) == (2, 25)
    assert cache.end_offset_for(5, 40) == (5, 40)  # the latest ends at the log end
    assert cache.end_offset_for(9, 40) == (5, 40)
    assert LeaderEpochCache([EpochEntry(3, 7)]).end_offset_for(1, 9) == (UNDEFINED, UNDEFINED)


def test_assign_ignores_old_epochs_and_truncation_forgets_later_ones():
    cache = _cache()
    assert not cache.assign(2, 30)
    assert not cache.assign(5, 30)
    cache.truncate_from_end(25)
    assert cache.latest_epoch == 2
    assert cache.assign(6, 22)  # a new leader's epoch after the follower truncated
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(6, 22)]


def test_divergence_as_fetch_v12_reports_it():
    leader = _cache()  # leader: epochs 0@0, 2@10, 5@25, log end 40
    assert diverging_epoch(leader, 40, 30, 5) is None  # in step
    assert diverging_epoch(leader, 40, 25, 2) is None  # at the end of epoch 2
    # the follower wrote epoch 2 past where the leader's epoch 2 ended
    assert diverging_epoch(leader, 40, 28, 2) == (2, 25)
    # the follower has an epoch 3 the leader never had
    assert diverging_epoch(leader, 40, 27, 3) == (2, 25)
    assert diverging_epoch(leader, 40, 0, -1) is None  # first fetch, nothing to compare


def test_the_checkpoint_survives_a_restart_and_bad_files_are_a_clear_error(tmp_path: Path):
    _cache().write(tmp_path)
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 10\n5 25\n"
    assert LeaderEpochCache.read(tmp_path).entries == _cache().entries
    assert LeaderEpochCache.read(tmp_path / "missing-dir-is-empty").entries == []
    for bad in ["1\n0\n", "0\n2\n0 0\n", "0\nx\n", ""]:
        (tmp_path / "leader-epoch-checkpoint").write_text(bad)
        with pytest.raises(LeaderEpochCheckpointError, match="remove it"):
            LeaderEpochCache.read(tmp_path)


def test_a_diverged_follower_truncates_where_the_logs_last_agreed():
    from core.broker.replication.leader_epoch import truncation_offset

    # leader: 0@0, 2@10, 5@25 (log end 40). The follower was leader in epoch 3 after
    # offset 20 and wrote to 30 before it lost leadership: 0@0, 2@10, 3@20.
    leader = _cache()
    follower = LeaderEpochCache([EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 20)])
    diverging = diverging_epoch(leader, 40, 30, 3)
    assert diverging == (2, 25)
    # the follower's epoch 2 ended at 20, before the leader's: it cuts there
    assert truncation_offset(follower, 30, diverging) == 20
    follower.truncate_from_end(20)
    assert diverging_epoch(leader, 40, 20, follower.latest_epoch) is None  # in step again
    # a follower whose log is shorter than the leader's epoch end keeps all it has
    short = LeaderEpochCache([EpochEntry(0, 0), EpochEntry(2, 10)])
    assert truncation_offset(short, 12, (2, 25)) == 12
    assert truncation_offset(short, 12, (UNDEFINED, UNDEFINED)) == 0
