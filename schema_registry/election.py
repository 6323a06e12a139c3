"""Leader election among registry instances, over the log's group membership.

Every instance joins the group ``schema.registry.group.id`` (default ``schema-registry``)
with protocol type ``sr`` and Confluent's member metadata (``SchemaRegistryIdentity``)::

    {"version":1,"host":"10.0.0.5","port":8081,"master_eligibility":true,"scheme":"http"}

The member the coordinator makes group leader computes the assignment, as Confluent's
registry does: among eligible members the one with the lexicographically smallest URL is
the registry leader; if two members advertise the same URL nobody is (error 1,
DUPLICATE_URLS, until the group changes). Every member receives the same assignment::

    {"version":1,"error":0,"master":"<member id>","master_identity":{...}}

One thread per instance joins, syncs and then heartbeats every
``kafkagroup.heartbeat.interval.ms``; when the coordinator answers that the group is
rebalancing, the instance first stops acting as leader (its listeners get ``None``, which
lets in-flight writes finish) and then rejoins. A leader that has not heartbeated successfully
for a whole session timeout steps down too (``lease_valid``): by then the coordinator may
have chosen another leader.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.backends import GroupMember, LogBackend
from core.backends.errors import (
    BackendError,
    IllegalGenerationError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

__all__ = ["Identity", "LeaderElector", "Leadership", "choose_leader"]

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "sr"
PROTOCOL_NAME = "v0"
NO_ERROR = 0
DUPLICATE_URLS = 1
RETRY_BACKOFF_S = 1.0


@dataclass(frozen=True, slots=True)
class Identity:
    """How other instances reach this one: Confluent's ``SchemaRegistryIdentity``."""

    host: str
    port: int
    scheme: str = "http"
    eligible: bool = True

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "host": self.host, "port": self.port,
                "master_eligibility": self.eligible, "scheme": self.scheme}

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: Any) -> Identity:
        """Parse member metadata or ``master_identity``; ``ValueError`` if malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"identity {data!r} is not a JSON object")
        host, port = data.get("host"), data.get("port")
        if not isinstance(host, str) or not isinstance(port, int):
            raise ValueError(f"identity {data!r} lacks host/port")
        eligible = data.get("master_eligibility", data.get("leader_eligibility", True))
        return cls(host, port, str(data.get("scheme") or "http"), eligible is not False)

    @classmethod
    def decode(cls, raw: bytes) -> Identity:
        try:
            return cls.from_json(json.loads(raw))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"bad member metadata {raw[:200]!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class Leadership:
    """The outcome of one rebalance, as this instance sees it."""

    generation: int
    leader: Identity | None   # None: no eligible member, or duplicate URLs
    is_self: bool
    member_id: str

    @property
    def leader_url(self) -> str | None:
        return None if self.leader is None else self.leader.url


def choose_leader(members: Sequence[GroupMember]) -> dict[str, bytes]:
    """The assignment every member receives (computed by the group leader)."""
    identities: dict[str, Identity] = {}
    for member in members:
        try:
            identities[member.member_id] = Identity.decode(member.metadata)
        except ValueError as exc:
            log.warning("ignoring group member %s: %s", member.member_id, exc)
    urls = [identity.url for identity in identities.values()]
    error, master, master_identity = NO_ERROR, None, None
    if len(set(urls)) != len(urls):
        error = DUPLICATE_URLS
        log.error("several registry instances advertise the same URL (%s); no leader until "
                  "each has its own host.name/port", ", ".join(sorted(urls)))
    else:
        eligible = sorted((identity.url, member_id) for member_id, identity
                          in identities.items() if identity.eligible)
        if eligible:
            master = eligible[0][1]
            master_identity = identities[master].to_json()
    assignment = json.dumps({"version": 1, "error": error, "master": master,
                             "master_identity": master_identity},
                            separators=(",", ":")).encode()
    return {member.member_id: assignment for member in members}


class LeaderElector:
    """Keeps this instance in the registry group and reports who the leader is.

    Listeners (``add_listener``) are called from the elector's thread with the result of
    each rebalance, and with ``None`` before this instance rejoins (no known leader
    meanwhile); the elector waits for them, so a listener may wait for in-flight work.
    """

    def __init__(self, backend: LogBackend, identity: Identity, *,
                 group_id: str = "schema-registry", session_timeout_ms: int = 10000,
                 heartbeat_interval_ms: int = 3000, rebalance_timeout_ms: int = 30000
                 ) -> None:
        self.backend = backend
        self.identity = identity
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self._listeners: list[Callable[[Leadership | None], None]] = []
        self._cond = threading.Condition()
        self._current: Leadership | None = None
        self._member_id = ""
        self._last_heartbeat = 0.0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def add_listener(self, listener: Callable[[Leadership | None], None]) -> None:
        """Call ``listener(leadership)`` on every change (add before ``start``)."""
        self._listeners.append(listener)

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("LeaderElector.start() called twice")
        self._thread = threading.Thread(target=self._run, name="sr-leader-election",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the group (so another instance takes over at once) and stop the thread,
        within about ``timeout`` seconds: a leave the log does not answer in time is
        abandoned (the coordinator then expires the session)."""
        deadline = time.monotonic() + timeout
        self._stopping.set()
        member_id = self._member_id
        self._set(None)
        if member_id:
            leaving = threading.Thread(target=self._leave, args=(member_id,),
                                       name="sr-leave-group", daemon=True)
            leaving.start()
            leaving.join(timeout)
            if leaving.is_alive():
                log.warning("did not leave group %s within %.1f s; its coordinator will "
                            "expire this member's session", self.group_id, timeout)
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(max(deadline - time.monotonic(), 0.1))

    def _leave(self, member_id: str) -> None:
        try:
            self.backend.leave_group(self.group_id, member_id=member_id)
        except BackendError as exc:
            log.info("could not leave group %s: %s", self.group_id, exc)

    # ------------------------------------------------------------------ queries

    @property
    def current(self) -> Leadership | None:
        """The leadership of the current generation; None while rebalancing."""
        return self._current

    def lease_valid(self) -> bool:
        """True while this member's last successful heartbeat (or sync) is younger than the
        session timeout: only then can it be sure it is still in its generation."""
        age_ms = (time.monotonic() - self._last_heartbeat) * 1000
        return age_ms < self.session_timeout_ms

    def wait_for_leadership(self, timeout: float) -> Leadership | None:
        """Wait up to ``timeout`` seconds for a generation with a leader; None if none."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._current is None or self._current.leader is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping.is_set():
                    return None
                self._cond.wait(min(remaining, 0.5))
            return self._current

    # ------------------------------------------------------------------ the thread

    def _set(self, leadership: Leadership | None) -> None:
        with self._cond:
            changed = leadership != self._current
            self._current = leadership
            self._cond.notify_all()
        if changed:
            for listener in self._listeners:
                listener(leadership)
        if changed and leadership is not None:
            if leadership.leader is None:
                log.warning("generation %d of group %s has no registry leader",
                            leadership.generation, self.group_id)
            elif leadership.is_self:
                log.info("this instance (%s) is the registry leader (generation %d)",
                         self.identity.url, leadership.generation)
            else:
                log.info("the registry leader is %s (generation %d)", leadership.leader_url,
                         leadership.generation)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                generation = self._join()
                self._heartbeat(generation)
            except UnknownMemberIdError:
                self._member_id = ""
                self._set(None)
            except (RebalanceInProgressError, IllegalGenerationError):
                self._set(None)
            except BackendError as exc:
                self._set(None)
                if not self._stopping.is_set():
                    log.warning("registry group %s: %s; retrying", self.group_id, exc)
                    self._stopping.wait(RETRY_BACKOFF_S)
            except Exception:  # top of the thread: keep electing, but say why
                self._set(None)
                log.exception("unexpected error in the registry leader election")
                self._stopping.wait(RETRY_BACKOFF_S)

    def _join(self) -> int:
        joined = self.backend.join_group(
            self.group_id, member_id=self._member_id, protocol_type=PROTOCOL_TYPE,
            protocols=[(PROTOCOL_NAME, self.identity.encode())],
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            client_id="ferry-schema-registry")
        self._member_id = joined.member_id
        if self._stopping.is_set():  # stop() ran while the join was pending
            self.backend.leave_group(self.group_id, member_id=joined.member_id)
            return joined.generation_id
        assignments = choose_leader(joined.members) if joined.is_leader else None
        data = self.backend.sync_group(self.group_id, generation_id=joined.generation_id,
                                       member_id=joined.member_id, assignments=assignments)
        self._last_heartbeat = time.monotonic()
        self._set(self._decode(data, joined.generation_id, joined.member_id))
        return joined.generation_id

    def _decode(self, data: bytes, generation: int, member_id: str) -> Leadership:
        try:
            assignment = json.loads(data)
            error = assignment.get("error", NO_ERROR)
            master = assignment.get("master")
            raw_identity = assignment.get("master_identity")
            leader = None if error or not master or raw_identity is None \
                else Identity.from_json(raw_identity)
        except (ValueError, AttributeError, UnicodeDecodeError) as exc:
            log.error("cannot read the registry group assignment %r: %s", data[:200], exc)
            return Leadership(generation, None, False, member_id)
        return Leadership(generation, leader, leader is not None and master == member_id,
                          member_id)

    def _heartbeat(self, generation: int) -> None:
        interval = self.heartbeat_interval_ms / 1000
        while not self._stopping.wait(interval):
            try:
                self.backend.heartbeat(self.group_id, generation_id=generation,
                                       member_id=self._member_id)
            except RebalanceInProgressError:
                log.info("registry group %s is rebalancing; rejoining", self.group_id)
                self._set(None)
                return
            except (IllegalGenerationError, UnknownMemberIdError):
                raise
            except BackendError as exc:
                log.warning("heartbeat to registry group %s failed: %s", self.group_id, exc)
                if not self.lease_valid():
                    self._set(None)
                    return
                continue
            self._last_heartbeat = time.monotonic()
