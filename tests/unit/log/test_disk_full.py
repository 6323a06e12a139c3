"""A write that fails (disk full, I/O error) at any write site loses no acknowledged record.

For every site the storage engine writes to (the .log, the offset index, the time index, a
segment roll, topic metadata, the __consumer_offsets topic) and for several positions of
the failure, a writer appends batch after batch; the disk "fills" at the site, appends fail
with StorageError and then LogDirOfflineError, space returns, appends resume. Every append
that returned is then read back exactly once at the offsets it was given, before and after
a reopen (which runs recovery). The failures are injected by wrapping ``os`` calls
(tests/unit/log/disk_faults.py): a real full file system cannot aim at one write site; the
integration test uses a real tmpfs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.log.errors import LogDirOfflineError, StorageError
from core.log.manager import LogManager
from core.log.records import decode_batch, encode_batch, iter_batches
from tests.unit.log.disk_faults import DiskFaults, Site

TOPIC = "orders"
# Small segments and an index entry for every batch, so that every site is written often.
CONFIGS = {"segment.bytes": "1200", "index.interval.bytes": "1"}

SITES = {
    "log": Site("write", ".log"),
    "offset index": Site("write", ".index"),
    "time index": Site("write", ".timeindex"),
    "segment roll": Site("create", ".log"),
    "roll: new offset index": Site("create", ".index"),
    "roll: new time index": Site("create", ".timeindex"),
}


def _open(data_dir: Path) -> LogManager:
    manager = LogManager.open(data_dir, background=False)
    manager.health.probe_interval_s = 0.0  # probe at every write while offline
    return manager


def _batch(n: int) -> bytearray:
    return encode_batch([(f"k{n}".encode(), f"value-{n}".encode() * 8, [], 1_700_000_000_000 + n)
                         for _ in range(2)])


def _stored(manager: LogManager) -> dict[int, bytes]:
    """offset -> value of every record of the topic's partition 0, failing on a duplicate."""
    plog = manager.log(TOPIC, 0)
    out: dict[int, bytes] = {}
    position = plog.log_start_offset
    while position < plog.log_end_offset:
        data = plog.read(position, 1 << 20).data
        for pos, header in iter_batches(data):
            for record in decode_batch(data, pos)[1]:
                assert record.offset not in out, f"offset {record.offset} stored twice"
                out[record.offset] = record.value
            position = header.last_offset + 1
    return out


def _append_until_fail(manager: LogManager, acked: dict[int, bytes], n: int,
                       limit: int) -> tuple[int, int]:
    """Append batches until one fails; return (batches appended, failing batch number)."""
    plog = manager.log(TOPIC, 0)
    for i in range(n, n + limit):
        end_before = plog.log_end_offset
        try:
            info = plog.append(_batch(i))
        except StorageError:
            assert plog.log_end_offset == end_before
            return i, i
        for offset in range(info.base_offset, info.last_offset + 1):
            acked[offset] = f"value-{i}".encode() * 8
    return n + limit, -1


@pytest.mark.parametrize("after", [1, 2, 5, 9])
@pytest.mark.parametrize(("site", "short"), [
    *((site, False) for site in SITES),
    *((site, True) for site, s in SITES.items() if s.op == "write"),  # part written, then full
])
def test_a_failed_write_loses_no_acknowledged_record(tmp_path, monkeypatch, site, after, short):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.create_topic(TOPIC, 1, CONFIGS)
    acked: dict[int, bytes] = {}
    n, _ = _append_until_fail(manager, acked, 0, 3)
    faults.arm(SITES[site], after=after, short=short)
    n, failed_at = _append_until_fail(manager, acked, n, 200)
    assert failed_at >= 0, "the armed site was never written"
    assert not manager.health.online
    faults.arm(Site("create", ""))  # the whole disk is full: the probe fails as well
    with pytest.raises(LogDirOfflineError):
        manager.log(TOPIC, 0).append(_batch(n))
    assert _stored(manager) == acked
    faults.free()  # space returns
    n, failed_at = _append_until_fail(manager, acked, n + 1, 20)
    assert failed_at == -1
    assert manager.health.online
    assert _stored(manager) == acked
    manager.close()
    manager = _open(tmp_path / "data")
    try:
        assert _stored(manager) == acked
        _append_until_fail(manager, acked, n, 3)
        assert _stored(manager) == acked
    finally:
        manager.close()


def test_a_failed_write_leaves_the_files_as_they_were(tmp_path, monkeypatch):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.create_topic(TOPIC, 1, {"index.interval.bytes": "1"})
    plog = manager.log(TOPIC, 0)
    for i in range(3):
        plog.append(_batch(i))
    sizes = {p.name: p.stat().st_size for p in plog.directory.iterdir()}
    faults.arm(SITES["time index"])
    with pytest.raises(StorageError, match="rolled back"):
        plog.append(_batch(3))
    assert {p.name: p.stat().st_size for p in plog.directory.iterdir()} == sizes
    segment = plog.segments()[-1]
    assert (len(segment.offset_index), len(segment.time_index)) == (2, 2)
    faults.free()
    manager.close()


def test_while_offline_nothing_is_written_and_reads_go_on(tmp_path, monkeypatch):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.health.probe_interval_s = 3600.0
    manager.create_topic(TOPIC, 1)
    plog = manager.log(TOPIC, 0)
    plog.append(_batch(0))
    faults.arm(SITES["log"])
    with pytest.raises(StorageError):
        plog.append(_batch(1))
    faults.free()
    # Not probed again yet: appends and topic creation fail at once, reads are served.
    with pytest.raises(LogDirOfflineError, match="offline for writes"):
        plog.append(_batch(1))
    with pytest.raises(LogDirOfflineError):
        manager.create_topic("other", 1)
    assert "other" not in manager.topics()
    assert _stored(manager) == {0: b"value-0" * 8, 1: b"value-0" * 8}
    manager.health.probe_interval_s = 0.0
    manager.health._next_probe = 0.0  # the interval has passed
    plog.append(_batch(1))
    assert plog.log_end_offset == 4
    manager.close()


@pytest.mark.parametrize("after", [1, 2])
def test_topic_metadata_write_failure(tmp_path, monkeypatch, after):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.create_topic(TOPIC, 1)
    faults.arm(Site("write", ".tmp"), after=after)
    failures = 0
    for i in range(3):
        try:
            manager.create_topic(f"t{i}", 2)
        except StorageError:
            failures += 1
    assert failures and not manager.health.online
    assert not list((tmp_path / "data" / ".topics").glob("*.tmp"))  # nothing half-written
    created = manager.topics()
    faults.free()
    manager.create_topic("late", 1)
    manager.close()
    manager = _open(tmp_path / "data")
    try:
        assert manager.topics() == sorted([*created, "late"])
        for name in manager.topics():
            manager.log(name, 0).append(_batch(0))
    finally:
        manager.close()


def test_alter_configs_on_a_full_disk_keeps_the_old_config(tmp_path, monkeypatch):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.create_topic(TOPIC, 1, {"retention.ms": "1000"})
    faults.arm(Site("write", ".tmp"))
    with pytest.raises(StorageError):
        manager.alter_topic_configs(TOPIC, {"retention.ms": "2000"})
    faults.free()
    assert manager.topic(TOPIC).overrides["retention.ms"] == "1000"
    manager.close()


def test_consumer_offsets_appends_roll_back(tmp_path, monkeypatch):
    from core.group.errors import OffsetStoreError
    from core.group.log_store import OFFSETS_TOPIC, LogOffsetStore

    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    store = LogOffsetStore(manager, partitions=1)
    committed = []
    for i in range(12):
        if i == 4:
            faults.arm(SITES["log"])
        if i == 8:
            faults.free()
        record = (f"key-{i}".encode(), f"offset-{i}".encode())
        try:
            store.append("g", [record])
        except OffsetStoreError:
            continue
        committed.append(record)
    assert 0 < len(committed) < 12
    assert list(store.load()) == committed
    plog = manager.log(OFFSETS_TOPIC, 0)
    assert plog.log_end_offset == len(committed)
    manager.close()
    manager = _open(tmp_path / "data")
    try:
        assert list(LogOffsetStore(manager, partitions=1).load()) == committed
    finally:
        manager.close()


def test_failed_fsync_stops_appends_to_the_partition_until_restart(tmp_path, monkeypatch):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.create_topic(TOPIC, 1)
    plog = manager.log(TOPIC, 0)
    plog.append(_batch(0))
    faults.arm(Site("fsync", ".log"))
    with pytest.raises(StorageError, match="fsync"):
        plog.flush()
    faults.free()
    assert plog.flushed_offset < plog.log_end_offset
    # The directory probe succeeds, but this partition needs recovery first.
    with pytest.raises(LogDirOfflineError, match="restart"):
        plog.append(_batch(1))
    manager.create_topic("other", 1)  # other partitions take writes again
    manager.close()
    manager = _open(tmp_path / "data")
    try:
        manager.log(TOPIC, 0).append(_batch(1))
        assert manager.log(TOPIC, 0).log_end_offset == 4
    finally:
        manager.close()


def test_a_roll_back_that_fails_keeps_the_partition_closed_to_appends(tmp_path, monkeypatch):
    faults = DiskFaults(monkeypatch)
    manager = _open(tmp_path / "data")
    manager.create_topic(TOPIC, 1, {"index.interval.bytes": "1"})
    plog = manager.log(TOPIC, 0)
    plog.append(_batch(0))
    real_ftruncate = os.ftruncate
    monkeypatch.setattr(os, "ftruncate", lambda fd, n: (_ for _ in ()).throw(OSError(5, "EIO")))
    faults.arm(SITES["offset index"])
    with pytest.raises(StorageError):
        plog.append(_batch(1))
    monkeypatch.setattr(os, "ftruncate", real_ftruncate)
    faults.free()
    with pytest.raises(LogDirOfflineError, match="could not be undone"):
        plog.append(_batch(2))
    assert plog.log_end_offset == 2
    manager.close()
    manager = _open(tmp_path / "data")
    try:
        # Recovery keeps the whole batch that was written but never acknowledged: it was
        # never given offsets a client saw, and it is a valid batch at the log end.
        plog = manager.log(TOPIC, 0)
        assert plog.log_end_offset in (2, 4)
        plog.append(_batch(2))
        assert len(_stored(manager)) == plog.log_end_offset
    finally:
        manager.close()
