"""What writing a long stream into the page cache costs, with and without
``ferry.page.cache.window.bytes``.

Writes ``--gib`` GiB into a new file in 256 kB ``write`` calls, as a partition log appends
its batches, with the log's page-cache window applied as the log applies it
(``core.log.page_cache.PageCacheWindow``), then removes the file. Reports this process's
kernel CPU time per 256 MiB slice, so a change of cost along the way shows, and in total;
each window is run ``--repeats`` times, alternating, with a pause between runs (freed
memory is returned to a ballooned VM's host after a few seconds).

    python3 bench/page_cache_write.py --gib 3 --repeats 2

The limit it is read against is the same write with the window off (``-1``, the kernel's
page cache as Kafka leaves it), measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.log.config import TopicConfig
from core.log.page_cache import PageCacheWindow

CHUNK = 256 * 1024
SLICE = 256 << 20


class _File:
    """A plain file seen as the page-cache window sees a segment."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = 0

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        pass


def page_cache_write(path: Path, size: int, window: int) -> tuple[float, float, list[float]]:
    """Write ``size`` bytes to a new file in 256 kB writes, as the log appends its batches
    with ``ferry.page.cache.window.bytes`` = ``window``, then remove it: (wall seconds,
    kernel CPU seconds of this process, kernel CPU seconds of each 256 MiB)."""
    block = os.urandom(CHUNK)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    started = time.perf_counter()
    slices, mark = [], before
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    file, cache = _File(fd), PageCacheWindow()
    try:
        while file.size < size:
            written = os.write(fd, block[:min(CHUNK, size - file.size)])
            cache.appended(file, file.size, written, window)  # type: ignore[arg-type]
            file.size += written
            if file.size % SLICE == 0:
                now = resource.getrusage(resource.RUSAGE_SELF).ru_stime
                slices.append(now - mark)
                mark = now
    finally:
        os.close(fd)
    wall = time.perf_counter() - started
    sys_s = resource.getrusage(resource.RUSAGE_SELF).ru_stime - before
    path.unlink()
    return wall, sys_s, slices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pause", type=float, default=10.0,
                        help="seconds between runs")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    size = int(args.gib * (1 << 30))
    windows = (-1, TopicConfig().page_cache_window_bytes)
    runs = []
    with tempfile.TemporaryDirectory(prefix="ferry-bench-pc-", dir=args.dir) as tmp:
        for _ in range(args.repeats):
            for window in windows:
                time.sleep(args.pause)
                wall, sys_s, slices = page_cache_write(Path(tmp) / "stream", size, window)
                runs.append({"window": window, "mb_per_s": round(size / wall / 1e6),
                             "kernel_us_per_mib": round(sys_s / (size >> 20) * 1e6, 1),
                             "kernel_s_per_256_mib": [round(s, 2) for s in slices]})
    by = {w: [r["kernel_us_per_mib"] for r in runs if r["window"] == w] for w in windows}
    print(json.dumps({"gib": args.gib, "runs": runs,
                      "kernel_us_per_mib_no_window": by[-1],
                      "kernel_us_per_mib_window": by[windows[1]],
                      "window_vs_no_window": [round(a / b, 2) for a, b in
                                              zip(by[windows[1]], by[-1], strict=True)]},
                     indent=2))


if __name__ == "__main__":
    main()
