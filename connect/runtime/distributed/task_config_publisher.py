"""``TaskConfigPublisher``: gets the task configs a connector generated into the config
topic, whichever worker the connector runs on.

The connector instance runs on one worker; only the leader writes the config topic. So
the herder hands new task configs to ``publish``: on the leader they are written at once
(``write``, on the calling thread); on a follower a single forwarder thread POSTs them to
the leader's internal ``/connectors/{name}/tasks``, signed with the session key when the
group is sessioned (KIP-507). A failure (no leader yet, the leader moved or died, a key
just rotated) is retried: the connector is due again after a back-off doubling from
250 ms to 10 s, and the herder then generates its task configs afresh, so a retry never
sends stale ones. One request per connector is in flight at a time.

Threads: ``schedule``, ``due``, ``next_due`` and ``forget`` from any thread; ``publish``
from the herder thread.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

from connect.api.errors import ConnectError, NotFoundError
from connect.runtime.distributed.config_store import ConfigBackingStore
from connect.runtime.distributed.forwarding import ForwardingError, http_request
from connect.runtime.distributed.membership import WorkerGroupMember
from connect.runtime.distributed.protocol import ConnectProtocol
from connect.runtime.distributed.session_keys import signature_headers

__all__ = ["BACKOFF_MAX_S", "BACKOFF_S", "TaskConfigPublisher"]

log = logging.getLogger(__name__)

#: Back-off of a failed publication, doubling (Kafka waits 250 ms between attempts).
BACKOFF_S = 0.25
BACKOFF_MAX_S = 10.0
#: How long the leader may take to answer a forwarded publication.
FORWARD_TIMEOUT_S = 30.0


class TaskConfigPublisher:
    """See the module docstring. ``write(name, configs)`` is the leader's write (raises
    ``NotFoundError`` for a deleted connector, ``ConnectError`` on failure); ``wakeup``
    makes the herder thread look at ``due()``."""

    def __init__(self, member: WorkerGroupMember, config_store: ConfigBackingStore, *,
                 url: str, signature_algorithm: str,
                 write: Callable[[str, list[dict[str, str]]], None],
                 wakeup: Callable[[], None],
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._member = member
        self._config_store = config_store
        self._url = url
        self._algorithm = signature_algorithm
        self._write = write
        self._wakeup = wakeup
        self._ssl_context = ssl_context  # for an https:// leader
        self._lock = threading.Lock()
        self._due: dict[str, float] = {}        # guarded by _lock
        self._failures: dict[str, int] = {}     # guarded by _lock
        self._in_flight: set[str] = set()       # guarded by _lock
        self._forwarder = ThreadPoolExecutor(1, thread_name_prefix="connect-forward")

    def schedule(self, name: str, delay_s: float = 0.0) -> None:
        """Generate and publish ``name``'s task configs after ``delay_s``."""
        with self._lock:
            at = time.monotonic() + delay_s
            self._due[name] = min(at, self._due.get(name, at))
        self._wakeup()

    def next_due(self) -> float | None:
        """The monotonic time the next connector is due, or None."""
        with self._lock:
            return min(self._due.values(), default=None)

    def due(self) -> list[str]:
        """The connectors due now (taken off the schedule)."""
        now = time.monotonic()
        with self._lock:
            names = sorted(n for n, at in self._due.items() if at <= now)
            for name in names:
                del self._due[name]
        return names

    def forget(self, name: str) -> None:
        """Nothing to publish for ``name`` (its configs are in place): reset its back-off."""
        with self._lock:
            self._failures.pop(name, None)

    def publish(self, name: str, configs: list[dict[str, str]]) -> None:
        """Write (leader) or send (follower) ``name``'s task configs."""
        if self._member.is_leader:
            try:
                self._write(name, configs)
                self.forget(name)
            except NotFoundError:
                log.info("not writing task configs of connector %s: it was deleted", name)
            except ConnectError as exc:
                self._failed(name, f"writing its task configs failed: {exc}")
            return
        with self._lock:
            if name in self._in_flight:  # try again once the request in flight is done
                self._due.setdefault(name, time.monotonic() + BACKOFF_S)
                return
            self._in_flight.add(name)
        self._forwarder.submit(self._forward, name, configs)

    def stop(self) -> None:
        self._forwarder.shutdown(wait=False, cancel_futures=True)

    def _forward(self, name: str, configs: list[dict[str, str]]) -> None:
        """The forwarder thread: POST the task configs to the leader, signed."""
        try:
            leader = self._member.leader_url
            if not leader or leader == self._url:
                raise ForwardingError("no leader is known")
            body = json.dumps(configs, separators=(",", ":")).encode()
            headers = {"Content-Type": "application/json"}
            if self._member.protocol is ConnectProtocol.SESSIONED:
                key = self._config_store.snapshot().session_key
                if key is None:
                    raise ForwardingError("no session key has been distributed yet")
                headers.update(signature_headers(key, self._algorithm, body))
            url = f"{leader}/connectors/{quote(name, safe='')}/tasks"
            response = http_request(url, "POST", body, headers, timeout_s=FORWARD_TIMEOUT_S,
                                    ssl_context=self._ssl_context)
            if response.status >= 300:
                raise ForwardingError(f"the leader {leader} answered {response.status}: "
                                      f"{response.body[:300].decode(errors='replace')}")
            log.info("sent %d task configs of connector %s to the leader %s", len(configs),
                     name, leader)
            self.forget(name)
        except Exception as exc:  # top of the forwarder thread: retried with back-off
            self._failed(name, f"sending its task configs to the leader failed: {exc}")
        finally:
            with self._lock:
                self._in_flight.discard(name)

    def _failed(self, name: str, problem: str) -> None:
        with self._lock:
            failures = self._failures.get(name, 0) + 1
            self._failures[name] = failures
        delay = min(BACKOFF_S * 2 ** (failures - 1), BACKOFF_MAX_S)
        log.warning("connector %s: %s; retrying in %.2f s", name, problem, delay)
        self.schedule(name, delay)
