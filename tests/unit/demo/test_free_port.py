"""``free_port`` across processes: pytest-xdist workers (and the servers they start, which
inherit their environment) draw from disjoint slices, so two workers never hand out the
same port; a lone process uses the whole range below the ephemeral ports."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

from core.cli.demo.processes import _ephemeral_range

PORTS_PER_PROCESS = 300

_DRAW = ("import json; from core.cli.demo.processes import free_port; "
         f"print(json.dumps([free_port() for _ in range({PORTS_PER_PROCESS})]))")


def _draw(worker: str | None, count: int | None) -> list[int]:
    """``PORTS_PER_PROCESS`` ports from one fresh process with the given xdist identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    if worker is not None:
        env["PYTEST_XDIST_WORKER"] = worker
    if count is not None:
        env["PYTEST_XDIST_WORKER_COUNT"] = str(count)
    done = subprocess.run([sys.executable, "-c", _DRAW], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_xdist_workers_never_hand_out_the_same_port() -> None:
    # 3 x 300 random draws from one shared range of ~22,000 ports would repeat some
    # (about 18 on average); from disjoint slices none can.
    low, _ = _ephemeral_range()
    drawn = {f"gw{i}": _draw(f"gw{i}", 3) for i in range(3)}
    for ports in drawn.values():
        assert len(set(ports)) == PORTS_PER_PROCESS  # never twice in one process
        assert all(10000 <= port < low for port in ports)
    spans = sorted((min(ports), max(ports)) for ports in drawn.values())
    for (_, first_max), (second_min, _) in itertools.pairwise(spans):
        assert first_max < second_min, spans
    assert [min(drawn[f"gw{i}"]) for i in range(3)] == sorted(min(p) for p in drawn.values())


def test_outside_xdist_and_with_a_nonsense_worker_id_the_whole_range_is_used() -> None:
    low, _ = _ephemeral_range()
    for worker, count in ((None, None), ("gw7", 2), ("master", 2)):
        ports = _draw(worker, count)
        assert all(10000 <= port < low for port in ports)
        # 300 draws over the whole range reach both of its halves
        middle = (10000 + low) // 2
        assert min(ports) < middle <= max(ports), (worker, min(ports), max(ports))
