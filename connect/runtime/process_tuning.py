"""Process-wide settings for a process that runs Connect tasks.

CPython's cyclic garbage collector runs a young-generation pass every 700 net container
allocations by default. A task allocates several containers per record (the record, its
headers, struct values, converter output) and frees them a moment later, so at tens of
thousands of records per second the collector runs thousands of times a second and,
every tenth pass, walks the batch in flight again. Records do not form reference
cycles, so those passes find nothing. Raising the young-generation threshold to 50,000
cut that cost from about a fifth of a task's time to a few percent in
``bench/connect_throughput.py``; cycles are still collected, just in larger steps.

Only the commands that run workers call this (``ferry connect``, ``ferry up``): the
setting belongs to the process, not to a library embedding the runtime.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["GC_THRESHOLDS", "tune_gc_for_record_streams"]

log = logging.getLogger(__name__)

#: (young generation, middle, old) thresholds for ``gc.set_threshold``.
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc_for_record_streams() -> None:
    """Collect cyclic garbage in larger steps; see the module docstring."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    log.debug("gc thresholds %s -> %s", before, GC_THRESHOLDS)
