"""A Connect worker's membership in its worker group, over any LogBackend.

``WorkerGroupMember`` runs Kafka's classic group protocol with protocol type ``connect``
(Kafka's ``WorkerCoordinator``): JoinGroup with the worker's url, config offset and current
assignment; the member the coordinator names leader runs the incremental cooperative
assignor on the config snapshot the herder gives it and hands out assignments in SyncGroup;
heartbeats keep the membership alive; a worker that loses the coordinator stops its work.

Lifecycle:

1. ``WorkerGroupMember(backend, url, listener, config)``; nothing happens yet.
2. ``start()`` starts two daemon threads: the *membership thread* (JoinGroup/SyncGroup, which
   block) and the *heartbeat thread*. The first rebalance begins at once.
3. The herder calls ``poll(timeout_s)`` from its own thread, in its main loop. All
   listener callbacks but ``config_snapshot`` run inside ``poll``, on that thread, one at a
   time and in order: ``on_revoked`` then ``on_assigned`` for each completed rebalance, and
   ``on_lost`` when the coordinator has been unreachable for too long.
4. ``request_rejoin()`` (any thread) starts a new rebalance, e.g. after the leader saw new
   task configs; ``wakeup()`` (any thread) makes a waiting ``poll`` return.
5. ``stop()`` leaves the group (unless ``leave=False``) and joins the threads. It does not
   call ``on_revoked``: the herder stops its own work on shutdown.

Rebalances are cooperative (KIP-415): a worker keeps running its work during a rebalance and
stops only what is revoked. A worker that had work revoked rejoins once ``on_revoked`` has
returned, so the follow-up round that hands the work to someone else starts only after it
stopped. An assignment with a scheduled delay makes the member rejoin after that delay.

Zombies (KAFKA-9184): when no coordinator answer (heartbeat, join or sync, errors included)
arrived for ``WorkerGroupConfig.lost_timeout_ms`` (two heartbeat intervals, less when the
session timeout is short), ``poll`` calls ``on_lost``, before the coordinator would expire
the session and hand the work to others; the member forgets its assignment and rejoins with
none. Eager rebalancing (``connect.protocol=eager``) is not supported.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from connect.api.errors import ConfigError, ConnectError
from connect.runtime.distributed.assignor import (
    AssignorState,
    MemberState,
    assign,
    max_config_offset,
)
from connect.runtime.distributed.protocol import (
    CONNECT_PROTOCOL_TYPE,
    EMPTY,
    AssignmentError,
    ConnectorsAndTasks,
    ConnectProtocol,
    ConnectProtocolError,
    ExtendedAssignment,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    join_protocols,
)
from connect.runtime.herder import ConnectorTaskId
from core.backends import errors as be
from core.backends.base import LogBackend
from core.backends.types import JoinResult

__all__ = [
    "ConfigSnapshotView",
    "WorkerGroupConfig",
    "WorkerGroupListener",
    "WorkerGroupMember",
]

log = logging.getLogger(__name__)

_THREAD_JOIN_S = 10.0


@dataclass(frozen=True)
class ConfigSnapshotView:
    """What the assignor needs from the config topic: the position read so far (Kafka's
    ``ClusterConfigState.offset``) and each connector's task count (0 while it has no task
    configs, or is inconsistent)."""

    offset: int
    task_counts: Mapping[str, int] = field(default_factory=dict)


class WorkerGroupListener(Protocol):
    """The herder's side of the membership; see the module docstring for the threads."""

    def config_snapshot(self) -> ConfigSnapshotView:
        """The worker's current view of the config topic, without waiting for more.

        Called on the membership thread before every JoinGroup (for the metadata) and, on
        the leader, once or twice while assigning; must be thread-safe and quick."""
        ...

    def on_revoked(self, revoked: ConnectorsAndTasks) -> None:
        """Stop these connectors and tasks before returning (flush their offsets and
        statuses). Called only with something to revoke, before the matching
        ``on_assigned``."""
        ...

    def on_assigned(self, assignment: ExtendedAssignment, generation: int) -> None:
        """A rebalance completed. ``assignment.assigned`` is everything this worker should
        run now (previous work minus revoked plus new); start what is not running yet, once
        the config topic has been read to ``assignment.config_offset``.

        When ``assignment.failed`` (CONFIG_MISMATCH) the work is unchanged: read the config
        topic to its end before returning; the member rejoins afterwards by itself."""
        ...

    def on_lost(self) -> None:
        """The coordinator was unreachable for too long: stop every connector and task now;
        another worker may get them. The member rejoins by itself."""
        ...


@dataclass(frozen=True)
class WorkerGroupConfig:
    """Group settings, by Kafka's distributed worker config names and defaults."""

    group_id: str = "connect-cluster"  #: group.id
    session_timeout_ms: int = 10000  #: session.timeout.ms
    heartbeat_interval_ms: int = 3000  #: heartbeat.interval.ms
    rebalance_timeout_ms: int = 60000  #: rebalance.timeout.ms
    scheduled_rebalance_max_delay_ms: int = 300000  #: scheduled.rebalance.max.delay.ms
    protocol: ConnectProtocol = ConnectProtocol.SESSIONED  #: connect.protocol
    retry_backoff_ms: int = 100  #: retry.backoff.ms
    retry_backoff_max_ms: int = 1000  #: retry.backoff.max.ms
    client_id: str = "ferry-connect"  #: client.id

    def __post_init__(self) -> None:
        if not self.group_id:
            raise ConfigError("group.id", "Must not be empty", value=self.group_id)
        for name, value in (("session.timeout.ms", self.session_timeout_ms),
                            ("heartbeat.interval.ms", self.heartbeat_interval_ms),
                            ("rebalance.timeout.ms", self.rebalance_timeout_ms)):
            if value < 1:
                raise ConfigError(name, "Value must be at least 1", value=value)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError("heartbeat.interval.ms",
                              "must be lower than session.timeout.ms "
                              f"({self.session_timeout_ms})", value=self.heartbeat_interval_ms)
        if self.scheduled_rebalance_max_delay_ms < 0:
            raise ConfigError("scheduled.rebalance.max.delay.ms", "Value must be at least 0",
                              value=self.scheduled_rebalance_max_delay_ms)
        if self.protocol is ConnectProtocol.EAGER:
            raise ConfigError("connect.protocol",
                              "the eager protocol is not supported; use compatible or "
                              "sessioned", value="eager")

    @property
    def lost_timeout_ms(self) -> int:
        """Silence from the coordinator after which the worker stops its work."""
        hb = self.heartbeat_interval_ms
        return min(2 * hb, max(hb, self.session_timeout_ms - hb))


@dataclass
class _Round:
    """A completed rebalance waiting for ``poll`` to report it."""

    assignment: ExtendedAssignment
    generation: int
    revoked: ConnectorsAndTasks
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class _LeaderRound:
    state: AssignorState
    owners: dict[object, str]


class WorkerGroupMember:
    """One worker's membership; see the module docstring for the lifecycle and threads.

    Properties are safe to read from any thread; they describe the last completed
    rebalance.
    """

    def __init__(self, backend: LogBackend, url: str, listener: WorkerGroupListener,
                 config: WorkerGroupConfig | None = None, *,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._backend = backend
        self._url = url
        self._listener = listener
        self._config = config or WorkerGroupConfig()
        self._wall_clock = wall_clock
        # Everything below is guarded by _cond.
        self._cond = threading.Condition()
        self._member_id = ""
        self._generation = -1
        self._leader_id = ""
        self._leader_url = ""
        self._protocol: ConnectProtocol | None = None
        #: The full assignment as of the last rebalance; None before the first and after a
        #: loss (then JoinGroup reports no allocation).
        self._assignment: ExtendedAssignment | None = None
        self._last_completed_generation = -1
        self._assignor_state: AssignorState | None = None
        self._assignor_state_generation = -1
        self._owners: dict[object, str] = {}
        self._joining = False
        self._rejoin_requested = True
        self._rejoin_at: float | None = None
        self._last_contact = time.monotonic()
        self._events: collections.deque[_Round] = collections.deque()
        self._woken = False
        self._started = False
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ properties

    @property
    def url(self) -> str:
        return self._url

    @property
    def member_id(self) -> str:
        with self._cond:
            return self._member_id

    @property
    def generation_id(self) -> int:
        """The generation of the last completed rebalance (-1 before the first)."""
        with self._cond:
            return self._last_completed_generation

    @property
    def leader_id(self) -> str:
        with self._cond:
            return self._leader_id

    @property
    def leader_url(self) -> str:
        """The leader's REST url, where followers forward writes ("" while unknown)."""
        with self._cond:
            return self._leader_url

    @property
    def is_leader(self) -> bool:
        with self._cond:
            return (self._assignment is not None and bool(self._member_id)
                    and self._leader_id == self._member_id)

    @property
    def assignment(self) -> ExtendedAssignment | None:
        """The full assignment after the last rebalance; None before it or after a loss."""
        with self._cond:
            return self._assignment

    @property
    def protocol(self) -> ConnectProtocol | None:
        """The sub-protocol the group agreed on (``sessioned`` means KIP-507 signing)."""
        with self._cond:
            return self._protocol

    @property
    def rebalancing(self) -> bool:
        """True while a rebalance is pending or in progress (REST writes answer 409)."""
        with self._cond:
            return self._joining or self._rejoin_requested or self._assignment is None

    def owner_url(self, work: str | ConnectorTaskId) -> str | None:
        """On the leader, the url of the worker the last rebalance gave ``work`` (a
        connector name or a task id); None elsewhere, while rebalancing, or if unassigned."""
        with self._cond:
            if self._joining or self._rejoin_requested or self._assignment is None:
                return None
            return self._owners.get(work)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the membership and heartbeat threads; the first rebalance begins."""
        with self._cond:
            if self._started:
                return
            self._started = True
            self._last_contact = time.monotonic()
        group = self._config.group_id
        self._threads = [
            threading.Thread(target=self._membership_loop, daemon=True,
                             name=f"ferry-connect-member:{group}"),
            threading.Thread(target=self._heartbeat_loop, daemon=True,
                             name=f"ferry-connect-heartbeat:{group}"),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, *, leave: bool = True) -> None:
        """Stop the threads and, with ``leave``, leave the group so the others rebalance at
        once. ``leave=False`` is what a crash looks like: the coordinator expires the member
        after ``session.timeout.ms``. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with self._cond:
            member_id = self._member_id
            self._cond.notify_all()
        if leave and member_id:
            try:
                self._backend.leave_group(self._config.group_id, member_id=member_id)
                log.info("worker %s left group %s", self._url, self._config.group_id)
            except be.BackendError as exc:
                log.warning("worker %s could not leave group %s: %s", self._url,
                            self._config.group_id, exc)
        for thread in self._threads:
            thread.join(_THREAD_JOIN_S)

    def request_rejoin(self) -> None:
        """Start a new rebalance soon (any thread)."""
        with self._cond:
            self._rejoin_requested = True
            self._cond.notify_all()

    def wakeup(self) -> None:
        """Make a waiting ``poll`` return (any thread)."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def poll(self, timeout_s: float) -> None:
        """Report completed rebalances and coordinator loss through the listener, on the
        calling thread. Waits up to ``timeout_s`` for something to report (or ``wakeup``);
        returns as soon as it reported something. An exception from a callback propagates;
        rebalances not yet reported stay queued for the next call."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            while not self._events and not self._woken and not self._stopping.is_set():
                now = time.monotonic()
                wait_s = deadline - now
                due = self._lost_due_locked()
                if due is not None:
                    if now >= due:
                        break
                    wait_s = min(wait_s, due - now)
                if wait_s <= 0:
                    break
                self._cond.wait(wait_s)
            self._woken = False
        while True:
            with self._cond:
                if not self._events:
                    break
                event = self._events.popleft()
            try:
                if event.revoked:
                    self._listener.on_revoked(event.revoked)
                self._listener.on_assigned(event.assignment, event.generation)
            finally:
                event.done.set()
        if self._check_lost():
            self._listener.on_lost()

    # ------------------------------------------------------------------ coordinator loss

    def _lost_due_locked(self) -> float | None:
        if self._assignment is None or self._stopping.is_set():
            return None
        return self._last_contact + self._config.lost_timeout_ms / 1000

    def _check_lost(self) -> bool:
        with self._cond:
            due = self._lost_due_locked()
            if due is None or time.monotonic() < due:
                return False
            log.warning("worker %s heard nothing from the coordinator of group %s for %d ms; "
                        "stopping its connectors and tasks so that no zombie keeps running",
                        self._url, self._config.group_id, self._config.lost_timeout_ms)
            self._assignment = None
            self._owners = {}
            self._rejoin_requested = True
            self._cond.notify_all()
            return True

    def _contact(self) -> None:
        with self._cond:
            self._last_contact = time.monotonic()

    # ------------------------------------------------------------------ heartbeats

    def _heartbeat_loop(self) -> None:
        interval = self._config.heartbeat_interval_ms / 1000
        retry = min(interval, self._config.retry_backoff_max_ms / 1000)
        wait_s = interval
        failing = False
        while not self._stopping.wait(wait_s):
            wait_s = interval
            with self._cond:
                member_id, generation = self._member_id, self._generation
                probe = self._joining and self._assignment is not None
            try:
                if member_id and generation >= 0:
                    self._backend.heartbeat(self._config.group_id, generation_id=generation,
                                            member_id=member_id)
                elif probe:
                    # Rejoining as a new member (no id to heartbeat with) while holding
                    # work: ask the coordinator something, so that silence still means loss.
                    self._backend.describe_group(self._config.group_id)
                else:
                    continue
                self._contact()
                if failing:
                    log.info("heartbeats to group %s work again", self._config.group_id)
                failing = False
            except (be.RebalanceInProgressError, be.IllegalGenerationError):
                self._contact()
                self._rejoin_after_heartbeat(generation, forget_member=False)
            except be.UnknownMemberIdError:
                self._contact()
                self._rejoin_after_heartbeat(generation, forget_member=True)
            except be.BackendError as exc:
                if not failing:
                    log.warning("heartbeat of worker %s to group %s failed: %s", self._url,
                                self._config.group_id, exc)
                failing = True
                wait_s = retry
            except Exception:  # the heartbeat thread must outlive one bad call
                log.exception("heartbeat of worker %s to group %s failed", self._url,
                              self._config.group_id)
                wait_s = retry

    def _rejoin_after_heartbeat(self, generation: int, *, forget_member: bool) -> None:
        with self._cond:
            # A verdict on a generation we already left, or one the join in progress will
            # settle anyway, must not cause another rebalance.
            if self._joining or generation != self._generation:
                return
            if forget_member:
                self._member_id, self._generation = "", -1
            if not self._rejoin_requested:
                log.debug("group %s is rebalancing; worker %s rejoins", self._config.group_id,
                         self._url)
            self._rejoin_requested = True
            self._cond.notify_all()

    # ------------------------------------------------------------------ rebalances

    def _membership_loop(self) -> None:
        failures = 0
        while True:
            with self._cond:
                while not self._stopping.is_set() and not self._rejoin_due_locked():
                    self._cond.wait(self._time_to_rejoin_locked())
                if self._stopping.is_set():
                    return
                self._rejoin_requested = False
                self._rejoin_at = None
                self._joining = True
            completed: _Round | None = None
            try:
                completed = self._join_and_sync()
                failures = 0
            except (be.RebalanceInProgressError, be.IllegalGenerationError) as exc:
                log.debug("rejoining group %s: %s", self._config.group_id, exc)
                self.request_rejoin()
            except be.UnknownMemberIdError as exc:
                log.debug("rejoining group %s as a new member: %s", self._config.group_id, exc)
                with self._cond:
                    self._member_id, self._generation = "", -1
                self.request_rejoin()
            except Exception as exc:  # the membership thread must outlive one bad round
                failures += 1
                if isinstance(exc, be.BackendError | ConnectError):
                    log.warning("rebalance of group %s failed, retrying: %s",
                                self._config.group_id, exc)
                else:
                    log.exception("rebalance of group %s failed, retrying",
                                  self._config.group_id)
                self._stopping.wait(self._backoff_s(failures))
                self.request_rejoin()
            finally:
                with self._cond:
                    self._joining = False
                    self._cond.notify_all()
            if completed is not None and (completed.revoked or completed.assignment.failed):
                # Cooperative: the work must be stopped (or the config read) before the
                # follow-up round can hand it elsewhere.
                while not completed.done.wait(0.1):
                    if self._stopping.is_set():
                        return
                if completed.assignment.failed:
                    self._stopping.wait(self._config.retry_backoff_max_ms / 1000)
                self.request_rejoin()

    def _rejoin_due_locked(self) -> bool:
        return self._rejoin_requested or (self._rejoin_at is not None
                                          and time.monotonic() >= self._rejoin_at)

    def _time_to_rejoin_locked(self) -> float | None:
        if self._rejoin_at is None:
            return None
        return max(0.0, self._rejoin_at - time.monotonic())

    def _backoff_s(self, failures: int) -> float:
        ms = self._config.retry_backoff_ms * 2 ** min(failures - 1, 16)
        return min(ms, self._config.retry_backoff_max_ms) / 1000

    def _join_and_sync(self) -> _Round | None:
        cfg = self._config
        snapshot = self._listener.config_snapshot()
        with self._cond:
            member_id, allocation = self._member_id, self._assignment
        protocols = [(name, meta) for name, meta in
                     join_protocols(cfg.protocol, self._url, snapshot.offset, allocation)
                     if name != ConnectProtocol.EAGER.value]
        joined = self._backend.join_group(
            cfg.group_id, member_id=member_id, protocol_type=CONNECT_PROTOCOL_TYPE,
            protocols=protocols, session_timeout_ms=cfg.session_timeout_ms,
            rebalance_timeout_ms=cfg.rebalance_timeout_ms, client_id=cfg.client_id)
        if self._stopping.is_set():
            return None
        try:
            protocol = ConnectProtocol(joined.protocol_name)
        except ValueError:
            raise ConnectProtocolError(
                f"group {cfg.group_id} agreed on protocol {joined.protocol_name!r}, which "
                "this worker did not offer") from None
        with self._cond:
            self._last_contact = time.monotonic()
            self._member_id, self._generation = joined.member_id, joined.generation_id
            self._protocol = protocol
        leader_round = None
        assignments = None
        if joined.is_leader:
            assignments, leader_round = self._lead(joined, protocol, snapshot)
        raw = self._backend.sync_group(cfg.group_id, generation_id=joined.generation_id,
                                       member_id=joined.member_id, assignments=assignments)
        if self._stopping.is_set():
            return None
        if not raw:
            raise ConnectProtocolError(
                f"the leader of group {cfg.group_id} gave this worker no assignment")
        return self._complete(joined, decode_assignment(raw), leader_round)

    def _lead(self, joined: JoinResult, protocol: ConnectProtocol,
              snapshot: ConfigSnapshotView) -> tuple[dict[str, bytes], _LeaderRound | None]:
        cfg = self._config
        metadata: dict[str, WorkerMetadata] = {}
        for member in joined.members:
            try:
                metadata[member.member_id] = decode_metadata(member.metadata)
            except ConnectProtocolError as exc:
                log.warning("member %s of group %s sent unreadable metadata (%s); treating "
                            "it as a worker with no work", member.member_id, cfg.group_id, exc)
                metadata[member.member_id] = WorkerMetadata(0, "", -1)
        members = {m: MemberState(meta.url, meta.config_offset, meta.current)
                   for m, meta in metadata.items()}
        leader_url = metadata[joined.member_id].url if joined.member_id in metadata else self._url
        max_offset = max_config_offset(members)
        if snapshot.offset < max_offset:
            snapshot = self._listener.config_snapshot()
        if snapshot.offset < max_offset:
            log.debug("leader %s has read the config topic to %d but a member is at %d; "
                     "asking everyone to catch up and rejoin", self._url, snapshot.offset,
                     max_offset)
            failed = encode_assignment(ExtendedAssignment(
                protocol.version, AssignmentError.CONFIG_MISMATCH, joined.member_id,
                leader_url, max_offset))
            return {m: failed for m in members}, None
        with self._cond:
            state = (self._assignor_state
                     if self._assignor_state_generation == self._last_completed_generation
                     else None)
        result = assign(members, snapshot.task_counts, state,
                        max_delay_ms=cfg.scheduled_rebalance_max_delay_ms,
                        now_ms=int(self._wall_clock() * 1000))
        out: dict[str, bytes] = {}
        owners: dict[object, str] = {}
        for m, part in result.members.items():
            out[m] = encode_assignment(ExtendedAssignment(
                protocol.version, AssignmentError.NONE, joined.member_id, leader_url,
                snapshot.offset, part.assigned, part.revoked, result.delay_ms))
            for item in part.full.connectors:
                owners[item] = members[m].url
            for task in part.full.tasks:
                owners[task] = members[m].url
        log.debug("leader %s assigned generation %d of group %s: %d workers, unassigned %s, "
                 "delay %d ms", self._url, joined.generation_id, cfg.group_id, len(members),
                 result.unassigned, result.delay_ms)
        return out, _LeaderRound(result.state, owners)

    def _complete(self, joined: JoinResult, received: ExtendedAssignment,
                  leader_round: _LeaderRound | None) -> _Round:
        with self._cond:
            self._last_contact = time.monotonic()
            previous = EMPTY if self._assignment is None else self._assignment.assigned
            # A failed assignment changes nothing until the config topic is caught up.
            full = previous if received.failed else (
                (previous - received.revoked) | received.assigned)
            assignment = ExtendedAssignment(
                received.version, received.error, received.leader, received.leader_url,
                received.config_offset, full, received.revoked, received.delay_ms)
            self._assignment = assignment
            self._leader_id = received.leader or joined.leader_id
            self._leader_url = received.leader_url
            self._last_completed_generation = joined.generation_id
            if leader_round is not None:
                self._assignor_state = leader_round.state
                self._assignor_state_generation = joined.generation_id
                self._owners = leader_round.owners
            else:
                self._owners = {}
            if received.delay_ms > 0:
                self._rejoin_at = time.monotonic() + received.delay_ms / 1000
            event = _Round(assignment, joined.generation_id,
                           EMPTY if received.failed else received.revoked)
            self._events.append(event)
            self._cond.notify_all()
        log.info("worker %s completed generation %d of group %s as %s: assigned %s, "
                 "revoked %s, now running %s%s", self._url, joined.generation_id,
                 self._config.group_id, "leader" if joined.is_leader else "follower",
                 received.assigned, received.revoked, full,
                 f" (assignment error {received.error})" if received.failed else "")
        return event
