"""``ferry.page.cache.window.bytes``: a partition's written data far behind its end leaves
the page cache; the newest window stays; -1 leaves everything to the kernel.

Residency is read from the kernel itself (``mincore(2)`` on a mapping of each segment), on
the real file system the tests write to. Every test here appends with ``flush.messages=1``
so that each page is clean (fsynced) when the window reaches it: a dirty page is only
written back by the first pass and dropped by the next, whose timing is the disk's.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import random
import sys

import pytest
from log_testing import batch_of, config, open_log, read_all

from core.log.page_cache import STEP_BYTES

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="posix_fadvise and mincore are Linux calls here")

MB = 1 << 20
PAGE = mmap.PAGESIZE
RECORD = 200_000  # four records a batch: ~800 kB appends

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def resident_pages(path: os.PathLike) -> list[bool]:
    """Which pages of ``path`` are in the page cache (mapping a file touches none)."""
    size = os.path.getsize(path)
    if size == 0:
        return []
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        try:
            pages = (size + PAGE - 1) // PAGE
            vector = ctypes.create_string_buffer(pages)
            if _libc.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed")
            return [byte & 1 == 1 for byte in vector.raw]
        finally:
            _libc.munmap(address, size)
    finally:
        os.close(fd)


def filesystem_type(path: os.PathLike) -> str:
    """The type of the file system ``path`` is on, from the longest matching mount point."""
    path = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            point = fields[1].replace("\\040", " ")
            inside = path == point or path.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best):
                best, kind = point, fields[2]
    return kind


@pytest.fixture(autouse=True)
def _droppable_page_cache(tmp_path):
    kind = filesystem_type(tmp_path)
    if kind in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on {kind}, whose pages are the files themselves: the "
                    "kernel cannot drop them")


def write(plog, total: int) -> None:
    rng = random.Random(7)
    while plog.size_bytes < total:
        values = [rng.randbytes(RECORD) for _ in range(4)]
        plog.append(batch_of([(None, v) for v in values], 1000))


def residency_by_position(directory) -> list[tuple[int, bool]]:
    """(position in the partition's written bytes, resident) for every page, oldest first."""
    out = []
    start = 0
    for path in sorted(directory.glob("*.log")):
        for i, resident in enumerate(resident_pages(path)):
            out.append((start + i * PAGE, resident))
        start += os.path.getsize(path)
    return out


def test_pages_more_than_the_window_behind_the_end_leave_the_page_cache(tmp_path):
    window = 16 * MB
    plog = open_log(tmp_path / "p", config(segment_bytes=8 * MB, flush_messages=1,
                                             ferry_page_cache_window_bytes=window))
    write(plog, 6 * STEP_BYTES)
    total = plog.size_bytes
    pages = residency_by_position(tmp_path / "p")
    # The window was last applied at most a step ago; below that cut every page was clean
    # when it was given, so none is left.
    cut = total - window - STEP_BYTES
    old = [resident for position, resident in pages if position + PAGE <= cut]
    newest = [resident for position, resident in pages if position >= total - window]
    assert len(old) > (3 * STEP_BYTES) // PAGE
    assert not any(old)
    assert sum(newest) >= 0.9 * len(newest)  # the head of the log is still served from memory
    # Dropped from the cache, not from the log: every record reads back (and its pages come
    # back into the cache as any read's do).
    assert len(read_all(plog, max_bytes=4 * MB)) == plog.log_end_offset
    plog.close()


def test_minus_one_leaves_the_page_cache_to_the_kernel(tmp_path):
    plog = open_log(tmp_path / "p", config(segment_bytes=8 * MB, flush_messages=1,
                                             ferry_page_cache_window_bytes=-1))
    write(plog, 4 * STEP_BYTES)
    pages = residency_by_position(tmp_path / "p")
    assert sum(resident for _, resident in pages) >= 0.9 * len(pages)
    plog.close()


def test_segments_deleted_by_retention_are_left_alone(tmp_path):
    """A segment retention removed (its files closed at once) is skipped, not advised."""
    plog = open_log(tmp_path / "p", config(segment_bytes=4 * MB, flush_messages=1,
                                             retention_bytes=12 * MB, file_delete_delay_ms=0,
                                             ferry_page_cache_window_bytes=40 * MB))
    write(plog, 2 * STEP_BYTES)
    assert plog.enforce_retention(0) > 0
    write(plog, plog.size_bytes + 4 * STEP_BYTES)
    assert plog.log_end_offset > plog.log_start_offset
    pages = residency_by_position(tmp_path / "p")
    assert pages  # the segments left are readable and the appends went on
    plog.close()


def test_a_truncated_log_goes_on_with_the_window(tmp_path):
    """A follower's truncation removes segments the window still follows and moves the
    active one back; appends after it continue, and every record reads back."""
    window = 8 * MB
    plog = open_log(tmp_path / "p", config(segment_bytes=8 * MB, flush_messages=1,
                                             ferry_page_cache_window_bytes=window))
    write(plog, 4 * STEP_BYTES)
    plog.truncate_to(plog.log_end_offset // 3)
    kept = plog.log_end_offset
    write(plog, plog.size_bytes + 4 * STEP_BYTES)
    assert plog.log_end_offset > kept
    total = plog.size_bytes
    old = [resident for position, resident in residency_by_position(tmp_path / "p")
           if position + PAGE <= total - window - STEP_BYTES]
    assert old and not any(old)
    records = read_all(plog, max_bytes=4 * MB)
    assert [r.offset for r in records] == list(range(plog.log_end_offset))
    plog.close()
