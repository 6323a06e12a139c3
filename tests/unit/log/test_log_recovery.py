"""Recovery on open: torn and corrupt tails, corrupt older batches, indexes, leftovers."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from log_testing import batch_of, config, open_log, read_all

from core.log.errors import CorruptRecordError
from core.log.records import encode_batch, iter_batches

SEGMENT = config(segment_bytes=1000, index_interval_bytes=200)


def segment_file(directory: Path, base: int, suffix: str = ".log") -> Path:
    return directory / f"{base:020d}{suffix}"


def fill(directory: Path, batches: int, cfg=SEGMENT) -> list[bytes]:
    """Append ``batches`` batches of 2 records; returns the values in offset order."""
    plog = open_log(directory, cfg)
    values = []
    for i in range(batches):
        pair = [b"value-%d-a" % i + b"x" * 40, b"value-%d-b" % i]
        plog.append(encode_batch([(b"k%d" % i, v, [], 1000 + i) for v in pair]))
        values += pair
    plog.close()
    return values


def batch_positions(path: Path) -> list[tuple[int, int]]:
    """(position, size) of each batch in a segment file."""
    data = path.read_bytes()
    return [(pos, h.size) for pos, h in iter_batches(data, validate=False)]


def flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x5A]))


def active_file(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def check_reopen(directory: Path, values: list[bytes], expected_end: int) -> None:
    """Reopen: the log ends at ``expected_end`` with the right records, and appends go on."""
    plog = open_log(directory, SEGMENT)
    assert plog.log_end_offset == expected_end
    assert [r.value for r in read_all(plog)] == values[:expected_end]
    info = plog.append(batch_of([(b"new", b"after-recovery")], 5))
    assert info.base_offset == expected_end
    plog.close()
    plog = open_log(directory, SEGMENT)
    assert [r.value for r in read_all(plog)] == [*values[:expected_end], b"after-recovery"]
    plog.close()


@pytest.mark.parametrize("garbage", ["random", "zeros", "huge-length", "old-batch"])
def test_garbage_after_the_last_batch_is_truncated(tmp_path, garbage):
    directory = tmp_path / "p"
    values = fill(directory, 12)
    path = active_file(directory)
    size = path.stat().st_size
    first_pos, first_size = batch_positions(path)[0]
    junk = {
        "random": random.Random(7).randbytes(300),
        "zeros": bytes(100),
        "huge-length": (0).to_bytes(8, "big") + (10**9).to_bytes(4, "big") + bytes(70),
        # A valid batch whose offsets go backwards (a copy of the segment's first batch).
        "old-batch": path.read_bytes()[first_pos : first_pos + first_size],
    }[garbage]
    with open(path, "ab") as f:
        f.write(junk)
    open_log(directory, SEGMENT).close()
    assert path.stat().st_size == size
    check_reopen(directory, values, len(values))


@pytest.mark.parametrize("damage", ["flip-payload", "flip-crc", "cut-tail", "cut-header"])
def test_a_damaged_last_batch_is_truncated(tmp_path, damage):
    directory = tmp_path / "p"
    values = fill(directory, 12)
    path = active_file(directory)
    position, size = batch_positions(path)[-1]
    if damage == "flip-payload":
        flip(path, position + size - 3)
    elif damage == "flip-crc":
        flip(path, position + 18)
    elif damage == "cut-tail":
        os.truncate(path, position + size - 5)
    else:
        os.truncate(path, position + 30)
    check_reopen(directory, values, len(values) - 2)


def test_the_active_segment_is_cut_at_its_first_bad_batch(tmp_path):
    directory = tmp_path / "p"
    values = fill(directory, 12)
    path = active_file(directory)
    base = int(path.name.split(".")[0])
    positions = batch_positions(path)
    assert len(positions) >= 3
    flip(path, positions[1][0] + positions[1][1] - 2)
    # Everything from the damaged batch on is gone, as after a torn write.
    check_reopen(directory, values, base + 2)


def test_a_corrupt_batch_in_an_older_segment_is_never_served(tmp_path):
    directory = tmp_path / "p"
    values = fill(directory, 12)
    path = segment_file(directory, 0)
    position, size = batch_positions(path)[1]
    flip(path, position + size - 2)
    plog = open_log(directory, SEGMENT)
    assert plog.log_end_offset == len(values)  # sealed segments are not cut on open
    with pytest.raises(CorruptRecordError, match="CRC"):
        plog.read(2, 1 << 20)
    with pytest.raises(CorruptRecordError):
        plog.read(0, 1 << 20)  # the good first batch is followed by the bad one
    later = plog.segments()[1].base_offset
    assert [r.value for r in read_all(plog, later)] == values[later:]
    plog.close()


def test_corruption_while_open_is_caught_on_read(tmp_path):
    directory = tmp_path / "p"
    fill(directory, 3)
    plog = open_log(directory, SEGMENT)
    path = segment_file(directory, 0)
    flip(path, batch_positions(path)[-1][0] + 40)
    with pytest.raises(CorruptRecordError):
        plog.read(4, 1 << 20)
    assert len(read_all(plog, 0, max_offset=4)) == 4
    plog.close()


@pytest.mark.parametrize("damage", ["missing", "ragged", "wrong-position", "missing-time"])
def test_a_bad_index_of_an_older_segment_is_rebuilt(tmp_path, damage):
    directory = tmp_path / "p"
    cfg = config(segment_bytes=3000, index_interval_bytes=100)
    values = fill(directory, 40, cfg)
    index = segment_file(directory, 0, ".index")
    entries = index.stat().st_size // 8
    assert entries > 3
    if damage == "missing":
        index.unlink()
    elif damage == "ragged":
        with open(index, "ab") as f:
            f.write(b"\x01\x02\x03")
    elif damage == "wrong-position":
        with open(index, "r+b") as f:  # last entry: right offset, position 1 byte off
            f.seek(entries * 8 - 4)
            position = int.from_bytes(f.read(4), "big")
            f.seek(entries * 8 - 4)
            f.write((position + 1).to_bytes(4, "big"))
    else:
        segment_file(directory, 0, ".timeindex").unlink()
    plog = open_log(directory, cfg)
    assert index.stat().st_size == entries * 8
    assert segment_file(directory, 0, ".timeindex").stat().st_size > 0
    assert plog.log_end_offset == len(values)
    for start in range(0, len(values), 7):
        assert [r.value for r in read_all(plog, start)] == values[start:]
    assert plog.offset_for_timestamp(1010) == (20, 1010)
    plog.close()


def test_a_torn_older_segment_keeps_its_good_batches_and_later_segments(tmp_path):
    directory = tmp_path / "p"
    values = fill(directory, 12)
    path = segment_file(directory, 0)
    position, size = batch_positions(path)[-1]
    os.truncate(path, position + size // 2)
    plog = open_log(directory, SEGMENT)
    kept = len(batch_positions(path)) * 2  # the records of the first segment's whole batches
    # The torn batch is cut; the gap it leaves is fine for readers, later segments stay.
    assert [r.offset for r in read_all(plog)] == [*range(kept), *range(kept + 2, len(values))]
    assert plog.log_end_offset == len(values)
    plog.close()


def test_interrupted_cleaning_and_deletion_leftovers_are_removed(tmp_path):
    directory = tmp_path / "p"
    values = fill(directory, 12)
    for suffix in (".log.cleaned", ".index.cleaned", ".log.deleted", ".timeindex.deleted"):
        segment_file(directory, 0, suffix).write_bytes(b"leftover")
    segment_file(directory, 900, ".index").write_bytes(bytes(8))  # index without a log
    plog = open_log(directory, SEGMENT)
    assert [r.value for r in read_all(plog)] == values
    plog.close()
    names = {p.name for p in directory.iterdir()}
    assert not any(n.endswith((".cleaned", ".deleted")) for n in names)
    assert segment_file(directory, 900, ".index").name not in names


def test_a_committed_swap_is_finished(tmp_path):
    directory = tmp_path / "p"
    values = fill(directory, 30)
    plog = open_log(directory, SEGMENT)
    bases = [s.base_offset for s in plog.segments()]
    assert len(bases) >= 4
    # A cleaned replacement of the first two segments, keeping two batches of them.
    data = plog.read(0, 1 << 20, max_offset=bases[2]).data
    kept = [(pos, h) for pos, h in iter_batches(data)][1::3]
    plog.close()
    swap = b"".join(data[pos : pos + h.size] for pos, h in kept)
    segment_file(directory, 0, ".log.swap").write_bytes(swap)
    segment_file(directory, 0, ".index.swap").write_bytes(b"stale")
    plog = open_log(directory, SEGMENT)
    kept_offsets = [o for _, h in kept for o in range(h.base_offset, h.last_offset + 1)]
    assert [r.offset for r in read_all(plog)] == kept_offsets + list(range(bases[2], len(values)))
    assert [s.base_offset for s in plog.segments()] == [0, *bases[2:]]
    plog.close()
    assert not any(p.name.endswith(".swap") for p in directory.iterdir())
