"""``LruCache``: the bounded map the serde caches use (callers hold their own lock)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

__all__ = ["LruCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A map of at most ``capacity`` entries that forgets the least recently used one.
    Not thread-safe: the owner guards it with its lock."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def get_or_build(self, key: K, build: Callable[[], V],
                     lock: AbstractContextManager[Any]) -> V:
        """The value cached under ``key``, else ``build()``'s, then cached. ``lock`` (the
        owner's) is held to read and to write the cache, not while building, so two
        threads may both build a missing value: the last one stays."""
        with lock:
            cached = self.get(key)
        if cached is not None:
            return cached
        value = build()
        with lock:
            self.put(key, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)
