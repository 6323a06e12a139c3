"""OffsetIndex and TimeIndex: lookups, Kafka's file format, lazy loading and rebuilding."""

from __future__ import annotations

import struct

from core.log.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_and_file_format(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, create=True)
    for relative, position in [(5, 100), (9, 250), (20, 800)]:
        index.append(relative, position)
    assert [index.lookup(r) for r in (0, 4, 5, 8, 9, 19, 20, 10**6)] == [
        0, 0, 100, 100, 250, 250, 800, 800]
    index.flush()
    assert path.read_bytes() == b"".join(struct.pack(">ii", *e)
                                         for e in [(5, 100), (9, 250), (20, 800)])
    index.close()
    # A sealed index is read lazily: the last entry comes from the file's tail.
    reopened = OffsetIndex(path)
    assert reopened.last_entry() == (20, 800)
    assert reopened.file_entries() == 3
    assert reopened.lookup(12) == 250 and len(reopened) == 3


def test_time_index_keeps_increasing_timestamps(tmp_path):
    path = tmp_path / "00000000000000000000.timeindex"
    index = TimeIndex(path, create=True)
    assert index.maybe_append(100, 0)
    assert not index.maybe_append(100, 4)  # not above the last timestamp
    assert not index.maybe_append(50, 6)
    assert index.maybe_append(300, 9)
    # The last entry below the target tells where the scan may start.
    assert [index.lookup_before(t) for t in (50, 100, 101, 300, 301)] == [None, None, 0, 0, 9]
    index.close()
    reopened = TimeIndex(path)
    assert reopened.last_entry() == (300, 9)
    assert reopened.lookup_before(1000) == 9


def test_rebuild_replaces_entries_and_ragged_files_are_reported(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">ii", 1, 2) + b"\x00\x01")
    index = OffsetIndex(path)
    assert index.file_entries() is None
    index.rebuild([(3, 30), (7, 70)])
    assert index.file_entries() == 2 and index.lookup(6) == 30
    index.close()
    assert OffsetIndex(path).lookup(100) == 70
    assert OffsetIndex(tmp_path / "missing.index").file_entries() is None
