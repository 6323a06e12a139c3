"""How ``tests/run`` spreads the suite over pytest-xdist workers (``--dist loadfile``).

Each test module goes to one worker as a whole, so a module's expensive fixtures (one
PostgreSQL, one broker, one moto or osmem server per module) start once, as in a serial
run. On top of plain ``loadfile``, the modules of a directory in ``ONE_WORKER_DIRS`` go to
one worker together, one after the other (the reason is given for each).

Modules are handed out in collection order, not xdist's default of the most tests first:
the few long integration modules (the demo, crash tests) then start early, and the many
short unit modules fill the gaps at the end instead of a long module starting last.

Every worker collects the whole suite and xdist refuses to run if two collections differ,
so a test id must not be random (give a random parameter a fixed ``id=``). Servers bind
ports from ``free_port``, which hands each worker its own slice of ports.

Loaded from ``tests/conftest.py``; without ``-n`` (or without pytest-xdist) it does
nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Directories (relative to the repository) whose modules run on one worker, one after
#: the other, and why.
ONE_WORKER_DIRS = {
    # One session-scoped SparkSession for the suite: a JVM costs ~10 s and ~1 GB to start.
    "tests/integration/spark/": "shared Spark session",
    # Three-node clusters with 500 ms elections and 3 s broker sessions, faults injected on
    # purpose: two such clusters at once on two cores would starve each other's heartbeats
    # into failovers the tests did not cause.
    "tests/integration/cluster/": "timing-sensitive clusters",
}


def scope_of(nodeid: str) -> str:
    """The unit of work ``nodeid`` belongs to: its module, or its shared directory."""
    module = nodeid.split("::", 1)[0]
    for directory in ONE_WORKER_DIRS:
        if module.startswith(directory):
            return directory
    return module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None  # an explicit other --dist mode is taken as asked
    from xdist.scheduler import LoadFileScheduling

    class ModuleScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False
    return ModuleScheduling(config, log)
