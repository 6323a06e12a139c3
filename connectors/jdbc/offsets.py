"""Source partitions and offsets in Confluent's shape, so stored offsets move over.

Partition of a table: ``{"protocol": "1", "table": "schema.table"}`` (Confluent's offset
protocol v1; v0's ``{"table": "table"}`` is read as a fallback). Partition of a custom
query: ``{"query": "query"}``. Offset: ``{"incrementing": n}`` and/or ``{"timestamp": epoch
ms, "timestamp_nanos": nanoseconds within the second}`` (Java's ``Timestamp.getNanos``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

__all__ = ["TableOffset", "query_partition", "table_partition", "table_partition_v0"]

INCREMENTING = "incrementing"
TIMESTAMP = "timestamp"
TIMESTAMP_NANOS = "timestamp_nanos"

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def table_partition(schema: str | None, table: str) -> dict[str, str]:
    return {"protocol": "1", "table": f"{schema}.{table}" if schema else table}


def table_partition_v0(table: str) -> dict[str, str]:
    return {"table": table}


def query_partition(query: str) -> dict[str, str]:
    return {"query": query}


@dataclasses.dataclass(frozen=True)
class TableOffset:
    """How far a table has been read: the last incrementing value and/or the last
    timestamp (UTC, microsecond precision) of rows already handed to Connect."""

    incrementing: int | None = None
    timestamp: dt.datetime | None = None

    def to_map(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.incrementing is not None:
            out[INCREMENTING] = self.incrementing
        if self.timestamp is not None:
            delta = self.timestamp - _EPOCH
            micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
            out[TIMESTAMP] = micros // 1000
            out[TIMESTAMP_NANOS] = (micros % 1_000_000) * 1000
        return out

    @staticmethod
    def from_map(stored: Mapping[str, Any] | None) -> TableOffset:
        if not stored:
            return TableOffset()
        inc = stored.get(INCREMENTING)
        millis = stored.get(TIMESTAMP)
        ts = None
        if millis is not None:
            seconds, _ = divmod(int(millis), 1000)
            nanos = stored.get(TIMESTAMP_NANOS)
            if nanos is None:
                nanos = (int(millis) % 1000) * 1_000_000
            # Python datetimes stop at microseconds; the nanoseconds below are dropped,
            # which only matters for databases storing nanoseconds (none SQLAlchemy maps).
            ts = _EPOCH + dt.timedelta(seconds=seconds, microseconds=int(nanos) // 1000)
        return TableOffset(None if inc is None else int(inc), ts)
