"""The checker of the replication fault tests: what a workload of unique values, produced
and acknowledged with their (partition, offset), must find when read back. Pure: it takes
the acknowledged writes and what was read, and names every anomaly."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

__all__ = ["CheckResult", "check"]


@dataclass
class CheckResult:
    #: acknowledged values that no read returned (the headline: must be empty)
    lost: list[int] = field(default_factory=list)
    #: (partition, offset) that hold another value than the one acknowledged there
    inconsistent: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: values read at more than one (partition, offset)
    duplicates: list[int] = field(default_factory=list)
    #: (partition, offset) where a value smaller than the previous one was read (one
    #: producer, idempotent: its values land in each partition in the order sent)
    out_of_order: list[tuple[int, int]] = field(default_factory=list)
    acknowledged: int = 0
    read: int = 0

    @property
    def ok(self) -> bool:
        return not (self.lost or self.inconsistent or self.duplicates or self.out_of_order)

    def summary(self) -> str:
        return (f"{self.acknowledged} acknowledged, {self.read} read: {len(self.lost)} lost "
                f"{self.lost[:10]}, {len(self.inconsistent)} inconsistent "
                f"{self.inconsistent[:5]}, {len(self.duplicates)} duplicated "
                f"{self.duplicates[:10]}, {len(self.out_of_order)} out of order "
                f"{self.out_of_order[:5]}")


def check(acknowledged: dict[int, tuple[int, int]],
          read: dict[int, list[tuple[int, int]]], *, ordered: bool = True) -> CheckResult:
    """``acknowledged``: value -> (partition, offset) from the producer's delivery reports;
    ``read``: partition -> [(offset, value)] in the order a consumer read them."""
    result = CheckResult(acknowledged=len(acknowledged))
    at: dict[tuple[int, int], int] = {}
    places: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for partition, records in read.items():
        previous = None
        for offset, value in records:
            result.read += 1
            at[(partition, offset)] = value
            places[value].append((partition, offset))
            if ordered and previous is not None and value < previous:
                result.out_of_order.append((partition, offset))
            previous = value
    for value, (partition, offset) in sorted(acknowledged.items()):
        if value not in places:
            result.lost.append(value)
        found = at.get((partition, offset))
        if found is not None and found != value:
            result.inconsistent.append((partition, offset, value, found))
    result.duplicates = sorted(v for v, where in places.items() if len(where) > 1)
    return result
