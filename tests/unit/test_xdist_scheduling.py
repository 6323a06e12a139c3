"""How tests/run's xdist workers share the suite (tests/xdist_scheduling.py): whole modules,
and whole directories where their modules must not run on two workers at once."""

from __future__ import annotations

from pathlib import Path

from xdist_scheduling import ONE_WORKER_DIRS, scope_of

REPO = Path(__file__).resolve().parents[2]


def test_a_test_goes_with_its_module() -> None:
    assert scope_of("tests/unit/log/test_segment.py::test_a") == "tests/unit/log/test_segment.py"
    assert scope_of("tests/unit/log/test_segment.py::TestX::test_b[1-2]") == \
        "tests/unit/log/test_segment.py"


def test_modules_of_a_one_worker_directory_go_together() -> None:
    for directory in ONE_WORKER_DIRS:
        modules = sorted((REPO / directory).glob("test_*.py"))
        assert len(modules) > 1, f"{directory} has no test modules left: update ONE_WORKER_DIRS"
        scopes = {scope_of(f"{m.relative_to(REPO).as_posix()}::test_x[p]") for m in modules}
        assert scopes == {directory}
    assert scope_of("tests/integration/spark_other/test_a.py::t") == \
        "tests/integration/spark_other/test_a.py"
