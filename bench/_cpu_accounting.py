"""CPU accounting for the benchmarks' timed sections: server, client side, everything else.

Reads Linux's /proc (process and machine CPU counters, in clock ticks of 10 ms) and
``getrusage``; elsewhere the figures are NaN.
"""

from __future__ import annotations

import dataclasses
import math
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Timed:
    """One timed section, with the CPU the server and the client side used meanwhile.

    CPU is a share of the wall time of the whole driver call (1.0 = one core busy
    throughout), so it includes the call's few ms of set-up. ``other_cpu`` is the
    machine's busy time not spent in the server or the client: load from anything else,
    which makes the run unrepresentative when it is more than a few percent.
    """

    seconds: float
    window_s: float  # wall time of the whole driver call, over which CPU was accounted
    server_cpu: float
    client_cpu: float
    other_cpu: float  # every other process on the machine, plus steal: should be ~0


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds all cores spent outside idle and iowait so far (Linux /proc/stat)."""
    try:
        jiffies = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return math.nan
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    return (sum(jiffies[:8]) - jiffies[3] - jiffies[4]) / os.sysconf("SC_CLK_TCK")


def client_cpu_s() -> float:
    """CPU seconds of this process (all threads: librdkafka's too) and its reaped children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def timed(server_pid: int, run: Callable[[], float]) -> Timed:
    """Run one driver (which returns its measured seconds) and account CPU around it."""
    server0, client0, busy0 = process_cpu_s(server_pid), client_cpu_s(), machine_busy_s()
    start = time.perf_counter()
    seconds = run()
    window = time.perf_counter() - start
    server = process_cpu_s(server_pid) - server0
    client = client_cpu_s() - client0
    other = machine_busy_s() - busy0 - server - client
    return Timed(seconds, window, server / window, client / window, max(0.0, other) / window)


def backend_ticks(postmaster: int) -> dict[int, int]:
    """CPU clock ticks so far of each client backend of a PostgreSQL server (children of
    ``postmaster`` whose process title names a TCP client; Linux /proc, empty elsewhere).
    The server's CPU for a read is the growth of these between two snapshots: background
    workers (autovacuum, checkpointer) are left out, and a backend that has exited no
    longer counts, so take the second snapshot before closing the connection."""
    out: dict[int, int] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != postmaster:
                continue
            title = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        if b"127.0.0.1(" in title:
            out[int(entry.name)] = int(fields[11]) + int(fields[12])
    return out


def backends_cpu_s(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU seconds the client backends used between two ``backend_ticks`` snapshots
    (all of a backend's CPU if it started in between)."""
    ticks = sum(t - before.get(pid, 0) for pid, t in after.items())
    return ticks / os.sysconf("SC_CLK_TCK")
