"""The fault tests' checker finds each anomaly it claims to, and nothing in a clean run."""

from __future__ import annotations

from jepsen_checker import check


def test_a_clean_run_passes() -> None:
    result = check({1: (0, 0), 2: (0, 1), 3: (1, 0)}, {0: [(0, 1), (1, 2)], 1: [(0, 3)]})
    assert result.ok, result.summary()
    assert (result.acknowledged, result.read) == (3, 3)


def test_each_anomaly_is_named() -> None:
    acknowledged = {1: (0, 0), 2: (0, 1), 3: (0, 2), 4: (1, 0)}
    read = {0: [(0, 1), (1, 5), (2, 3), (3, 2)], 1: [(0, 2)]}
    result = check(acknowledged, read)
    assert result.lost == [4]
    assert result.inconsistent == [(0, 1, 2, 5), (1, 0, 4, 2)]
    assert result.duplicates == [2]
    assert result.out_of_order == [(0, 2), (0, 3)]
    assert not result.ok
