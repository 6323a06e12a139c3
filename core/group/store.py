"""The OffsetStore seam: where the coordinator makes offset commits durable."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

__all__ = ["InMemoryOffsetStore", "OffsetStore"]


@runtime_checkable
class OffsetStore(Protocol):
    """Durable storage of ``__consumer_offsets`` records (Kafka's binary keys and values).

    Called by GroupCoordinator only: ``load()`` once, from ``GroupCoordinator.load``, before
    any request is served; ``append()`` from request threads. Offset commits are appended
    one at a time (under the coordinator's store lock) and group metadata records one at
    a time (under its state lock), so each key's records reach the log in the order of
    the coordinator's cache; the two kinds may be appended concurrently, so ``append``
    must be thread-safe.
    """

    def append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append ``(key, value)`` records of ``group_id`` atomically; ``None`` value is a
        tombstone. Returns once they are durable per the topic's flush policy. Raises
        ``core.group.errors.OffsetStoreError`` on failure (nothing was appended)."""
        ...

    def load(self) -> Iterable[tuple[bytes, bytes | None]]:
        """Every stored record in log order (per group, the order of ``append`` calls)."""
        ...


class InMemoryOffsetStore:
    """An OffsetStore held in a list: for tests, and for drivers that need no durability."""

    def __init__(self, records: Iterable[tuple[bytes, bytes | None]] = ()):
        self._lock = threading.Lock()
        self._records: list[tuple[bytes, bytes | None]] = list(records)

    def append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        with self._lock:
            self._records.extend(records)

    def load(self) -> list[tuple[bytes, bytes | None]]:
        with self._lock:
            return list(self._records)

    @property
    def records(self) -> list[tuple[bytes, bytes | None]]:
        """A copy of everything appended so far, in order."""
        return self.load()
