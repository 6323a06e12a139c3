"""Who may open one more connection: Kafka's connection limits and the file descriptors left.

Kafka's ``max.connections`` caps the broker's connections, ``max.connections.per.ip`` one
address's, and ``max.connections.per.ip.overrides`` (``host:count,...``) sets other caps for
some addresses. A connection over a per-address cap is closed at once, as Kafka's acceptor
does. Over the broker-wide cap Kafka's acceptor stops accepting until a slot frees (new
connections wait in the listen backlog); asyncio gives no clean way to pause accepting, so
Ferry closes those connections too, and clients retry with their reconnect backoff.

On top of Kafka's limits, a connection is refused while fewer than ``fd_reserve`` file
descriptors are left under the process's open-file limit, so that idle connections can
never take the descriptors the log needs for segments, indexes and new partitions, nor
make ``accept()`` itself fail (which asyncio reports once per waiting connection).

All methods run on the event loop's thread.
"""

from __future__ import annotations

import logging
import os
import resource
import socket
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Protocol

__all__ = ["ConnectionQuotas", "ConnectionSettings", "FileDescriptors", "parse_overrides"]

log = logging.getLogger(__name__)

#: Descriptors kept free for the log and admin work: an eighth of the limit, at least 64.
_RESERVE_FRACTION = 8
_MIN_RESERVE = 64
# Counting open descriptors lists /proc/self/fd (about 1 ms with 1,000 open), too slow for
# every accept in a flood: a count is reused for this long while far from the limit, each
# connection admitted since counting as one more descriptor.
_RECOUNT_AFTER_S = 0.5


class FileDescriptors:
    """The process's open-file limit and how many descriptors are open now."""

    def __init__(self) -> None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.limit = soft if soft != resource.RLIM_INFINITY else 1 << 30
        self.reserve = max(_MIN_RESERVE, self.limit // _RESERVE_FRACTION)

    @staticmethod
    def open_count() -> int | None:
        """Descriptors open now (None where the platform cannot tell cheaply)."""
        for directory in ("/proc/self/fd", "/dev/fd"):
            try:
                return len(os.listdir(directory)) - 1  # listdir's own descriptor
            except OSError:
                continue
        return None

    def headroom(self) -> int | None:
        """Descriptors that can still be opened before the limit (None if unknown)."""
        count = self.open_count()
        return None if count is None else self.limit - count


def parse_overrides(text: str, key: str = "max.connections.per.ip.overrides"
                    ) -> dict[str, int]:
    """``host:count,host:count`` as Kafka writes it, with each host resolved to its address
    (IPv6 addresses in brackets or bare). Raises ValueError naming the bad entry."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host = host.strip().strip("[]")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"{key}: {item!r} is not of the form HOST:COUNT")
        try:
            address = socket.getaddrinfo(host, None)[0][4][0]
        except (OSError, UnicodeError):
            raise ValueError(f"{key}: cannot resolve host {host!r}") from None
        overrides[str(address)] = int(count)
    return overrides


class ConnectionSettings(Protocol):
    """The broker settings the quotas follow (a ``BrokerConfig``)."""

    max_connections: int
    max_connections_per_ip: int
    max_connections_per_ip_overrides: str


class ConnectionQuotas:
    """Counts open connections by address and decides whether a new one may stay.

    ``follow(source)`` makes the caps track ``source()`` (the broker's current config),
    since Kafka lets AlterConfigs change them while the broker runs.
    """

    def __init__(self, max_connections: int, max_per_ip: int,
                 overrides: Mapping[str, int] | None = None,
                 fds: FileDescriptors | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self.fds = fds or FileDescriptors()
        self._clock = clock
        self.total = 0
        self._by_address: Counter[str] = Counter()
        self._counted_headroom: int | None = None
        self._counted_at = 0.0
        self._admitted_since_count = 0
        self._source: Callable[[], ConnectionSettings] | None = None
        self._followed: ConnectionSettings | None = None

    def follow(self, source: Callable[[], ConnectionSettings]) -> None:
        """Take the caps from ``source()`` from now on, re-read when it returns another
        object."""
        self._source = source
        self._sync()

    def _sync(self) -> None:
        settings = self._source() if self._source is not None else None
        if settings is None or settings is self._followed:
            return
        self._followed = settings
        try:
            self.overrides = parse_overrides(settings.max_connections_per_ip_overrides)
        except ValueError as exc:  # a host that no longer resolves: keep the others' caps
            log.warning("keeping the previous max.connections.per.ip.overrides: %s", exc)
        self.max_connections = settings.max_connections
        self.max_per_ip = settings.max_connections_per_ip

    def _headroom(self, fd: int | None) -> int | None:
        """Descriptors left: exact near the limit, estimated (never too high) elsewhere."""
        # Descriptors are allocated lowest first: every one below ``fd`` is open.
        if fd is not None and self.fds.limit - (fd + 1) < self.fds.reserve:
            return self.fds.limit - (fd + 1)
        now = self._clock()
        estimate = None
        if self._counted_headroom is not None and now - self._counted_at < _RECOUNT_AFTER_S:
            estimate = self._counted_headroom - self._admitted_since_count
        if estimate is None or estimate < 2 * self.fds.reserve:
            self._counted_headroom = estimate = self.fds.headroom()
            self._counted_at = now
            self._admitted_since_count = 0
        return estimate

    def admit(self, address: str, fd: int | None = None) -> str | None:
        """Count a new connection from ``address`` (its socket ``fd``, if known); or, if it
        must be refused, the reason (and nothing is counted)."""
        self._sync()
        cap = self.overrides.get(address, self.max_per_ip)
        if self._by_address[address] >= cap:
            return (f"address already has the configured maximum of {cap} connections "
                    "(max.connections.per.ip)")
        if self.total >= self.max_connections:
            return (f"the broker already has the configured maximum of "
                    f"{self.max_connections} connections (max.connections)")
        headroom = self._headroom(fd)
        if headroom is not None and headroom < self.fds.reserve:
            return (f"only {headroom} of {self.fds.limit} file descriptors are left and "
                    f"{self.fds.reserve} are kept for the log; raise the open-file limit "
                    "(ulimit -n) or lower max.connections")
        self._by_address[address] += 1
        self.total += 1
        self._admitted_since_count += 1
        return None

    def release(self, address: str) -> None:
        """A connection admitted from ``address`` closed."""
        self.total -= 1
        self._by_address[address] -= 1
        if self._by_address[address] <= 0:
            del self._by_address[address]
