"""``WriteRouter``: run each write on the leader, forwarding it there from a follower.

A write request (register, delete, config, mode) arriving at any instance goes through
``WriteRouter.run(local, forward)``:

1. wait (bounded) until a rebalance has produced a leader;
2. on the leader: take the write lock, check the instance is still the leader of that
   generation with a valid lease, read the topic to its end once per generation (so ids
   continue after everything earlier leaders wrote), then run ``local()``;
3. on a follower: ``forward(leader_url)`` relays the HTTP request; on success the follower
   reads the topic to its end before answering, so the caller's next read on this instance
   sees its write (read-your-writes). A leader that cannot be reached, or that answers that
   it is no longer the leader, is retried until the deadline, as leadership may be moving.

The write lock also makes a stepping-down leader finish its in-flight writes before it
rejoins the group (``on_leadership``), so a new leader that reads to the log end sees them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from schema_registry import errors as e
from schema_registry.election import LeaderElector, Leadership
from schema_registry.store import SchemaStore

__all__ = ["FORWARDED_HEADER", "ForwardedResponse", "WriteRouter"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Set on requests a follower forwards; the leader never forwards such a request again.
FORWARDED_HEADER = "X-Ferry-Forwarded-By"
_RETRY_PAUSE_S = 0.2
_FORWARDED_WAIT_S = 2.0


@dataclass(frozen=True, slots=True)
class ForwardedResponse:
    """The leader's answer to a forwarded request, relayed to the client as is."""

    status: int
    body: bytes
    content_type: str


class WriteRouter:
    """Routes writes to the leader. See the module docstring."""

    def __init__(self, store: SchemaStore, elector: LeaderElector, *,
                 timeout_s: float = 10.0) -> None:
        self.store = store
        self.elector = elector
        self.timeout_s = timeout_s
        self.write_lock = threading.Lock()
        self._synced_generation: int | None = None

    def on_leadership(self, leadership: Leadership | None) -> None:
        """The elector's callback: when this instance stops being the leader, wait for its
        in-flight writes and forget that it has caught up."""
        if leadership is None or not leadership.is_self:
            with self.write_lock:
                self._synced_generation = None

    def run(self, local: Callable[[], T],
            forward: Callable[[str], ForwardedResponse] | None) -> T | ForwardedResponse:
        """Run ``local`` on the leader, or ``forward`` the request to it. ``forward=None``
        means the request was itself forwarded: it is only ever handled locally."""
        # A forwarded write that finds no leader here answers soon (50004), so that the
        # forwarding instance retries with what it learns meanwhile.
        timeout = self.timeout_s if forward is not None else min(self.timeout_s,
                                                                 _FORWARDED_WAIT_S)
        deadline = time.monotonic() + timeout
        last_problem = ""
        forward_failed = False
        while True:
            remaining = deadline - time.monotonic()
            leadership = self.elector.wait_for_leadership(max(remaining, 0))
            if leadership is None:
                raise e.UnknownLeaderError(
                    f"Leader not known: no registry instance became the leader within "
                    f"{timeout:.0f} s{f' ({last_problem})' if last_problem else ''}")
            if leadership.is_self:
                done, result = self._run_as_leader(leadership, local)
                if done:
                    return result  # type: ignore[return-value]
                last_problem = "leadership moved while the write was starting"
            elif forward is None:
                last_problem = (f"this instance received a forwarded write but the leader is "
                                f"{leadership.leader_url}")
            else:
                url = leadership.leader_url
                assert url is not None
                try:
                    response = forward(url)
                except e.ForwardingError as exc:
                    last_problem, forward_failed = exc.message, True
                else:
                    if not _leader_moved(response):
                        if 200 <= response.status < 300:
                            self._catch_up()
                        return response
                    last_problem = f"{url} answered that it is not the leader"
                    forward_failed = False
            if time.monotonic() >= deadline:
                if forward_failed:
                    raise e.ForwardingError(last_problem)
                raise e.UnknownLeaderError(f"Leader not known: {last_problem}")
            time.sleep(_RETRY_PAUSE_S)

    def _catch_up(self) -> None:
        """Read-your-writes after a forwarded write: read the topic to its end. The write
        itself succeeded, so a failure here is logged, not answered."""
        try:
            self.store.sync()
        except e.RegistryError as exc:
            log.warning("a forwarded write succeeded but this instance could not read it "
                        "back yet: %s", exc.message)

    def _run_as_leader(self, leadership: Leadership, local: Callable[[], T]
                       ) -> tuple[bool, T | None]:
        with self.write_lock:
            current = self.elector.current
            if current is None or not current.is_self or \
                    current.generation != leadership.generation or \
                    not self.elector.lease_valid():
                return False, None
            if self._synced_generation != current.generation:
                # Ids continue after everything earlier leaders wrote: read it all first.
                self.store.sync()
                self._synced_generation = current.generation
                log.info("leader caught up with the schemas topic at offset %d "
                         "(generation %d)", self.store.position, current.generation)
            try:
                return True, local()
            except (e.StoreError, e.StoreTimeoutError):
                # A record may have been written without being read back: the next write
                # reads the topic to its end again before deriving ids from the state.
                self._synced_generation = None
                raise


def _leader_moved(response: ForwardedResponse) -> bool:
    """True for the leader's "I am not the leader" answer (50004), which is retried."""
    return response.status >= 500 and b'"error_code":50004' in response.body.replace(b" ", b"")
