"""``DistributedHerder``: the Herder of one worker in a Connect cluster (distributed mode).

Cluster state lives in the log: connector and task configs, target states, restart
requests and the session key in the config topic (``ConfigBackingStore``), statuses in the
status topic (``StatusBackingStore``), source offsets in the offsets topic (the worker's
``OffsetStore``), sink offsets in the groups ``connect-<name>``. Workers with the same
``group.id`` form one group (``WorkerGroupMember``); its leader assigns connectors and
tasks with incremental cooperative rebalancing.

Threads:

* **The herder thread** loops: ``member.poll()`` (which calls ``on_revoked``,
  ``on_assigned`` and ``on_lost`` on this thread), then a tick: requests from REST
  threads, config changes read from the config topic, restart requests, task config
  generation, leader duties. Only this thread starts and stops connectors and tasks
  (``LocalWork``), and it starts nothing before the config topic is read to the offset the
  assignment was made from.
* **REST threads** serve reads from the stores' snapshots (thread-safe). Writes run on the
  leader, under ``_write_lock``, after reading the config topic to its end: a worker that
  is not the leader raises ``NotLeaderError`` and the REST edge forwards the request.
  Restarts run on the herder thread of the worker that runs the connector or task
  (``NotAssignedError`` forwards them there). While a rebalance is in progress for longer
  than ``REBALANCE_WAIT_S`` or no leader is known, writes fail with
  ``RebalanceInProgressError`` (409).
* **The membership threads** call ``config_snapshot()`` only.
* **Task and connector threads** report statuses and ask for task reconfiguration; both
  only queue work.
* **The forwarder thread** (``TaskConfigPublisher``) sends task configs generated on a
  follower to the leader's internal ``POST /connectors/{name}/tasks``, signed with the
  session key.

Failures: a worker that loses the group coordinator (``on_lost``) or whose readers of the
internal topics hear nothing from the log for ``session.timeout.ms`` stops all its work,
so no zombie keeps writing, and runs again once it rejoined.
"""

from __future__ import annotations

import collections
import logging
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any, TypeVar
from urllib.parse import urlsplit

from connect.api.errors import AlreadyExistsError, ConnectError, NotFoundError
from connect.runtime.connector_validation import (
    connector_type_of,
    plugin_config,
    validate_connector_config,
)
from connect.runtime.distributed.config_store import (
    ClusterConfigState,
    ConfigBackingStore,
    ConfigUpdateListener,
    RestartRequest,
    SessionKey,
)
from connect.runtime.distributed.errors import NotAssignedError, NotLeaderError
from connect.runtime.distributed.local_work import LocalWork, task_configs_changed
from connect.runtime.distributed.membership import (
    ConfigSnapshotView,
    WorkerGroupConfig,
    WorkerGroupMember,
)
from connect.runtime.distributed.protocol import (
    EMPTY,
    ConnectorsAndTasks,
    ConnectProtocol,
    ExtendedAssignment,
)
from connect.runtime.distributed.session_keys import (
    InternalRequestSignature,
    new_session_key,
    verify_request,
)
from connect.runtime.distributed.status_store import (
    ConnectorStatus,
    State,
    StatusBackingStore,
    TaskStatus,
)
from connect.runtime.distributed.task_config_publisher import TaskConfigPublisher
from connect.runtime.errors import BadRequestError, RebalanceInProgressError
from connect.runtime.herder import (
    ConnectorInfo,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    Herder,
    PluginInfo,
    ServerInfo,
    TargetState,
    TaskInfo,
    TaskState,
)
from connect.runtime.offset_admin import connector_offsets, modify_offsets
from connect.runtime.secrets import mask_config, mask_task_config, restore_masked, secret_keys
from connect.runtime.server_info import log_cluster_id, package_version
from connect.runtime.worker import Worker
from connect.runtime.worker_config import DistributedConfig

__all__ = ["NO_LEADER_MESSAGE", "REBALANCE_WAIT_S", "DistributedHerder"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Kafka's 409 messages (HerderRequestHandler).
NO_LEADER_MESSAGE = ("Cannot complete request momentarily due to no known leader URL, "
                     "likely because a rebalance was underway.")
STALE_CONFIG_MESSAGE = ("Cannot complete request momentarily due to stale configuration "
                        "(typically caused by a concurrent config change)")
#: How long a write waits for a rebalance in progress to finish before answering 409.
REBALANCE_WAIT_S = 10.0
#: How long a request queued for the herder thread may wait (Kafka: 90 s).
REQUEST_TIMEOUT_S = 90.0
#: Longest pause of the herder loop (bounds how late periodic checks run).
TICK_S = 0.5
#: A tick older than this makes GET /health report the worker unhealthy.
STUCK_TICK_S = 60.0


class _ConfigListener(ConfigUpdateListener):
    """Config topic callbacks (reader thread): queue work for the herder thread."""

    def __init__(self, herder: DistributedHerder) -> None:
        self._herder = herder

    def on_connector_config_update(self, connector: str) -> None:
        self._herder._config_changed()

    def on_connector_config_remove(self, connector: str) -> None:
        self._herder._config_changed()

    def on_task_config_update(self, tasks: list[ConnectorTaskId]) -> None:
        self._herder._config_changed()

    def on_connector_target_state_change(self, connector: str) -> None:
        self._herder._config_changed()

    def on_session_key_update(self, key: SessionKey) -> None:
        log.info("read a new session key: %r", key)

    def on_restart_request(self, request: RestartRequest) -> None:
        self._herder._restart_requested(request)


class DistributedHerder(Herder):
    """See the module docstring. Lifecycle: construct → ``start()`` (reads the internal
    topics, joins the group, starts the herder thread) → ``stop()`` (stops the work,
    leaves the group, stops the stores and the worker)."""

    def __init__(self, worker: Worker, config: DistributedConfig, *, worker_id: str,
                 url: str, version: str | None = None,
                 wall_clock: Callable[[], float] = time.time,
                 rest_client_tls: ssl.SSLContext | None = None) -> None:
        """``rest_client_tls`` verifies other workers' HTTPS listeners when this worker
        sends them requests (task configs to the leader)."""
        self.worker = worker
        self.config = config
        self.worker_id = worker_id
        self.url = url.rstrip("/")
        self._version = version or package_version()
        self._wall_clock = wall_clock
        backend = worker.backend
        self.config_store = ConfigBackingStore(
            backend, topic=config.config_storage_topic,
            replication_factor=config.replication_factor(
                config.config_storage_replication_factor),
            topic_settings=config.storage_topic_settings("config.storage."),
            listener=_ConfigListener(self))
        self.status_store = StatusBackingStore(
            backend, topic=config.status_storage_topic,
            partitions=config.status_storage_partitions,
            replication_factor=config.replication_factor(
                config.status_storage_replication_factor),
            topic_settings=config.storage_topic_settings("status.storage."))
        self.member = WorkerGroupMember(backend, self.url, self, WorkerGroupConfig(
            group_id=config.group_id, session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            scheduled_rebalance_max_delay_ms=config.scheduled_rebalance_max_delay_ms,
            protocol=ConnectProtocol.from_config(config.connect_protocol),
            retry_backoff_ms=config.retry_backoff_ms,
            client_id=f"connect-{worker_id}"))
        self.work = LocalWork(worker, self.config_store, self.status_store, worker_id,
                              generation=lambda: self._generation,
                              on_reconfigure=self._reconfigure_requested,
                              on_connector_error=self._connector_failed)
        self.publisher = TaskConfigPublisher(
            self.member, self.config_store, url=self.url,
            signature_algorithm=config.inter_worker_signature_algorithm,
            write=self._write_task_configs, wakeup=self.member.wakeup,
            ssl_context=rest_client_tls)
        #: Serialises config topic writes on the leader (REST threads, herder thread).
        self._write_lock = threading.RLock()
        # Everything below is guarded by _lock.
        self._lock = threading.Lock()
        self._requests: collections.deque[tuple[Callable[[], Any], Future[Any]]] = (
            collections.deque())
        self._config_dirty = True
        self._restarts: list[RestartRequest] = []
        self._connector_errors: list[tuple[str, BaseException]] = []
        self._generation = -1
        self.rebalances_completed = 0
        self.last_rebalance_at: float | None = None
        self._assigned: ConnectorsAndTasks = EMPTY
        self._assignment_offset = -1
        # Herder thread only.
        self._pending_start = False
        self._cut_off = False
        self._marked_generation = -1
        self._ready = False
        self._stage = "starting"
        self._last_tick = time.monotonic()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"connect-herder-{worker_id}")

    # ================================================================== lifecycle

    def start(self) -> None:
        """Read the status and config topics (creating them if missing), then join the
        group and start the herder thread. Raises ``ConfigError`` for an unusable internal
        topic, ``ConnectError`` when the log cannot be read in time."""
        self.status_store.start()
        self.config_store.start()
        self._thread.start()
        self.member.start()
        log.info("distributed herder %s started in group %s", self.worker_id,
                 self.config.group_id)

    def stop(self) -> None:
        """Stop every connector and task (offsets committed), leave the group, stop the
        stores and the worker. Idempotent; bounded by the task shutdown timeout."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.member.wakeup()
        if self._thread.is_alive():
            self._thread.join(self.worker.config.task_shutdown_graceful_timeout_ms / 1000 + 30)
            if self._thread.is_alive():
                log.warning("the herder thread of %s did not stop (%s)", self.worker_id,
                            self._stage)
        else:
            self.work.stop_all()
        self.member.stop(leave=True)
        self.publisher.stop()
        self.status_store.stop()
        self.config_store.stop()
        self.worker.stop()
        log.info("distributed herder %s stopped", self.worker_id)

    def server_info(self) -> ServerInfo:
        return ServerInfo(self._version, "", log_cluster_id(self.worker.backend))

    def health(self) -> tuple[str, str]:
        if not self._ready:
            return "starting", "Worker is still starting up."
        if not self._thread.is_alive():
            return "unhealthy", "Worker's herder thread is not running."
        if self._cut_off or self.member.assignment is None:
            return ("unhealthy", "Worker has lost contact with the log or its group "
                                 "coordinator and stopped its connectors and tasks; it "
                                 "rejoins when the log answers.")
        if time.monotonic() - self._last_tick > STUCK_TICK_S:
            return "unhealthy", f"Worker's herder thread is stuck {self._stage}."
        return "healthy", "Worker has completed startup and is ready to handle requests."

    # ================================================================== the herder thread

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    self._stage = "polling the group"
                    self.member.poll(self._poll_timeout())
                    if self._stopping.is_set():
                        break
                    self._tick()
                except Exception:  # top of the herder loop: log, pause, go on
                    log.exception("the herder tick of %s failed (%s); continuing",
                                  self.worker_id, self._stage)
                    self._stopping.wait(1.0)
        finally:
            self._stage = "stopping its connectors and tasks"
            try:
                self.work.stop_all()
            finally:
                self._fail_requests(ConnectError("The worker is shutting down."))

    def _poll_timeout(self) -> float:
        with self._lock:
            if self._requests:
                return 0.0
            # While cut off from the log the tick does nothing else: no busy loop.
            if not self._cut_off and (self._config_dirty or self._restarts
                                      or self._connector_errors):
                return 0.0
        due = self.publisher.next_due()
        timeout = TICK_S
        if due is not None:
            timeout = min(timeout, max(0.0, due - time.monotonic()))
        return timeout

    def _tick(self) -> None:
        self._last_tick = time.monotonic()
        self._stage = "running requests"
        self._run_requests()
        if self._check_contact():
            return
        self._stage = "applying config changes"
        self._apply_config()
        self._stage = "handling connector failures"
        with self._lock:
            errors, self._connector_errors = self._connector_errors, []
        for name, error in errors:
            self.work.fail_connector(name, error)
        self._stage = "restarting connectors and tasks on request"
        with self._lock:
            restarts, self._restarts = self._restarts, []
        for request in restarts:
            if self.work.restart(request):
                self._schedule_reconfigure(request.connector)
        self._stage = "generating task configs"
        self._reconfigure_due()
        self._stage = "doing the leader's work"
        self._leader_duties()

    def _run_requests(self) -> None:
        while True:
            with self._lock:
                if not self._requests:
                    return
                fn, future = self._requests.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the waiting REST thread
                future.set_exception(exc)

    def _fail_requests(self, error: Exception) -> None:
        with self._lock:
            pending, self._requests = list(self._requests), collections.deque()
        for _, future in pending:
            if future.set_running_or_notify_cancel():
                future.set_exception(error)

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the herder thread and return its result (or raise its error)."""
        if threading.current_thread() is self._thread:
            return fn()
        if self._stopping.is_set() or not self._thread.is_alive():
            raise ConnectError("The worker is not running.")
        future: Future[T] = Future()
        with self._lock:
            self._requests.append((fn, future))
        self.member.wakeup()
        try:
            return future.result(REQUEST_TIMEOUT_S)
        except FutureTimeoutError:
            future.cancel()
            raise ConnectError(f"Request timed out. The worker is currently {self._stage}."
                               ) from None

    # ------------------------------------------------------------------ contact with the log

    def _check_contact(self) -> bool:
        """True while the worker is cut off from the log (its work then stays stopped)."""
        silent = max(self.config_store.reader.seconds_since_contact(),
                     self.status_store.reader.seconds_since_contact())
        if silent > self.config.session_timeout_ms / 1000:
            if not self._cut_off:
                log.warning("worker %s has heard nothing from the log for %.1f s; stopping "
                            "its connectors and tasks so that no zombie keeps writing",
                            self.worker_id, silent)
                self._cut_off = True
                self._stage = "stopping its work after losing the log"
                self.work.stop_all()
            return True
        if self._cut_off:
            log.info("worker %s reads the log again; rejoining the group", self.worker_id)
            self._cut_off = False
            with self._lock:
                self._config_dirty = True
            self.member.request_rejoin()
        return False

    # ------------------------------------------------------------------ config changes

    def _config_changed(self) -> None:
        with self._lock:
            self._config_dirty = True
        self.member.wakeup()

    def _restart_requested(self, request: RestartRequest) -> None:
        with self._lock:
            self._restarts.append(request)
        self.member.wakeup()

    def _reconfigure_requested(self, name: str) -> None:
        """A connector asked for task reconfiguration (its own thread)."""
        self._schedule_reconfigure(name)

    def _connector_failed(self, name: str, error: BaseException) -> None:
        """A connector raised an error through its context (its own thread)."""
        with self._lock:
            self._connector_errors.append((name, error))
        self.member.wakeup()

    def _schedule_reconfigure(self, name: str) -> None:
        self.publisher.schedule(name)

    def _apply_config(self) -> None:
        """Apply what the config topic says to the local work; start assigned work once
        the topic is read to the assignment's offset."""
        with self._lock:
            dirty, self._config_dirty = self._config_dirty, False
            assigned, offset = self._assigned, self._assignment_offset
        if not dirty and not self._pending_start:
            return
        old = self.work.snapshot
        snapshot = self.config_store.snapshot()
        can_start = (snapshot.offset >= offset and not self._cut_off
                     and self.member.assignment is not None)
        restarted = self.work.update(snapshot, assigned, start=can_start)
        self._pending_start = not can_start and not assigned.is_empty()
        for name in restarted:
            self._schedule_reconfigure(name)
        for name in snapshot.inconsistent_connectors:
            if self.work.connector_running(name):
                self._schedule_reconfigure(name)
        if (_work_shape(old) != _work_shape(snapshot) and snapshot.offset > offset
                and self.member.assignment is not None):
            log.debug("the connectors or task counts changed; worker %s rejoins the group",
                     self.worker_id)
            self.member.request_rejoin()

    # ------------------------------------------------------------------ task configs

    def _reconfigure_due(self) -> None:
        """Generate the task configs of connectors that are due and publish them if they
        differ from the config topic's."""
        for name in self.publisher.due():
            configs = self.work.generate_task_configs(name)
            if configs is None:
                continue
            if task_configs_changed(self.config_store.snapshot(), name, configs):
                self.publisher.publish(name, configs)
            else:
                self.publisher.forget(name)

    def _write_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """The leader writes a connector's task configs, unless they are already there
        (or the connector is STOPPED, whose task configs stay empty)."""
        with self._write_lock:
            snapshot = self._read_config_to_end()
            if not snapshot.contains(name):
                raise NotFoundError(f"Connector {name} not found")
            if snapshot.target_state(name) is TargetState.STOPPED and configs:
                log.info("not writing task configs of connector %s: it is STOPPED", name)
                return
            if not task_configs_changed(snapshot, name, configs):
                return
            log.info("writing %d task configs of connector %s", len(configs), name)
            self.config_store.put_task_configs(name, configs)

    def put_task_configs(self, name: str, configs: list[dict[str, str]],
                         signature: InternalRequestSignature | None) -> None:
        """The internal ``POST /connectors/{name}/tasks``: a worker running the connector
        sends the task configs it generated. Checked against the session key when the
        group is sessioned (``InternalRequestSignatureError``), then written by the
        leader (``NotLeaderError`` elsewhere)."""
        if self.member.protocol is ConnectProtocol.SESSIONED:
            verify_request(signature, self.config_store.snapshot().session_key,
                           self.config.inter_worker_verification_algorithms)
        self._require_leader("Only the leader can write task configs")
        self._write_task_configs(name, [{str(k): str(v) for k, v in c.items()}
                                        for c in configs])

    # ------------------------------------------------------------------ the leader's work

    def _leader_duties(self) -> None:
        member = self.member
        if not member.is_leader or member.rebalancing:
            return
        if member.protocol is ConnectProtocol.SESSIONED:
            self._maybe_rotate_session_key()
        if self._marked_generation != member.generation_id:
            self._mark_unassigned_work()

    def _maybe_rotate_session_key(self) -> None:
        now_ms = int(self._wall_clock() * 1000)
        key = self.config_store.snapshot().session_key
        if key is not None and now_ms < key.creation_timestamp + \
                self.config.inter_worker_key_ttl_ms:
            return
        self._stage = "writing a new session key"
        fresh = new_session_key(self.config.inter_worker_key_generation_algorithm, now_ms,
                                self.config.inter_worker_key_size)
        try:
            with self._write_lock:
                self.config_store.put_session_key(fresh)
            log.info("leader %s distributed a new session key (%s)", self.worker_id,
                     "none before" if key is None else "the previous one expired")
        except ConnectError as exc:
            log.warning("writing a new session key failed: %s", exc)

    def _mark_unassigned_work(self) -> None:
        """Statuses of work no member runs after this rebalance (its worker left; the work
        waits for ``scheduled.rebalance.max.delay.ms``) become UNASSIGNED, so status does
        not show a dead worker running them."""
        member = self.member
        generation = member.generation_id
        snapshot = self.config_store.snapshot()
        items: list[str | ConnectorTaskId] = [*snapshot.connectors(), *snapshot.all_tasks()]
        owners = {item: member.owner_url(item) for item in items}
        if member.rebalancing or member.generation_id != generation:
            return  # the owners may be from different rounds: try after the next one
        self._marked_generation = generation
        running = {urlsplit(url).netloc for url in owners.values() if url}
        for item, url in owners.items():
            if url:
                continue
            status = (self.status_store.get(item) if isinstance(item, str)
                      else self.status_store.get_task(item))
            if status is None or status.worker_id in running or status.state not in (
                    State.RUNNING, State.PAUSED, State.RESTARTING):
                continue
            log.debug("%s ran on %s, which left the group; marking it UNASSIGNED", item,
                     status.worker_id)
            if isinstance(status, ConnectorStatus):
                self.status_store.put_safe(ConnectorStatus(
                    status.connector, State.UNASSIGNED, status.worker_id, generation))
            else:
                self.status_store.put_safe(TaskStatus(
                    status.id, State.UNASSIGNED, status.worker_id, generation))

    # ================================================================== group membership

    def config_snapshot(self) -> ConfigSnapshotView:
        """Membership thread: the config position and task counts for the assignor."""
        snapshot = self.config_store.snapshot()
        return ConfigSnapshotView(snapshot.offset, _work_shape(snapshot))

    def on_revoked(self, revoked: ConnectorsAndTasks) -> None:
        self._stage = f"stopping revoked work {revoked}"
        log.debug("worker %s stops revoked work %s", self.worker_id, revoked)
        with self._lock:
            self._assigned = self._assigned - revoked
        self.work.stop(revoked)

    def on_assigned(self, assignment: ExtendedAssignment, generation: int) -> None:
        with self._lock:
            self._generation = generation
            # For /metrics: Connect's worker-rebalance-metrics completed-rebalances-total
            # and time-since-last-rebalance-ms.
            self.rebalances_completed += 1
            self.last_rebalance_at = time.monotonic()
        self._stage = "reading the config topic for a new assignment"
        try:
            self.config_store.refresh(self.config.worker_sync_timeout_ms / 1000)
        except ConnectError as exc:
            log.warning("worker %s could not read the config topic to its end within %d "
                        "ms (%s); it starts its assigned work once it has read offset %d",
                        self.worker_id, self.config.worker_sync_timeout_ms, exc,
                        assignment.config_offset)
        if assignment.failed:
            with self._lock:
                self._config_dirty = True
            return
        with self._lock:
            self._assigned = assignment.assigned
            self._assignment_offset = assignment.config_offset
            self._config_dirty = True
        self._stage = "starting assigned work"
        self._apply_config()
        self._ready = True

    def on_lost(self) -> None:
        self._stage = "stopping its work after losing the group"
        with self._lock:
            self._assigned = EMPTY
        self.work.stop_all()

    # ================================================================== REST: routing

    def _await_rebalance(self) -> None:
        deadline = time.monotonic() + REBALANCE_WAIT_S
        while self.member.rebalancing and time.monotonic() < deadline \
                and not self._stopping.is_set():
            time.sleep(0.05)

    def _require_leader(self, what: str) -> None:
        """Return on the leader; else raise where to go (or 409 while there is nowhere)."""
        self._await_rebalance()
        member = self.member
        if member.rebalancing:
            raise RebalanceInProgressError(NO_LEADER_MESSAGE)
        if member.is_leader:
            return
        leader = member.leader_url
        if not leader or leader == self.url:
            raise RebalanceInProgressError(NO_LEADER_MESSAGE)
        raise NotLeaderError(f"{what}; the leader is {leader}", leader,
                             after_success=self._catch_up)

    def _catch_up(self) -> None:
        """After a write forwarded from here succeeded: read it, so reads here show it."""
        try:
            self.config_store.refresh(self.config.worker_sync_timeout_ms / 1000)
        except ConnectError as exc:
            log.debug("reading the config topic after a forwarded write failed: %s", exc)

    def _owner_error(self, work: str | ConnectorTaskId, what: str) -> ConnectError:
        member = self.member
        if member.rebalancing:
            return RebalanceInProgressError(NO_LEADER_MESSAGE)
        if member.is_leader:
            owner = member.owner_url(work)
            if not owner or owner == self.url:
                return RebalanceInProgressError(
                    f"Cannot complete request momentarily: {work} runs on no worker at the "
                    "moment (its worker left and it waits to be reassigned, or a rebalance "
                    "is underway)")
            return NotAssignedError(f"Cannot {what} since it is not assigned to this member",
                                    owner)
        leader = member.leader_url
        if not leader or leader == self.url:
            return RebalanceInProgressError(NO_LEADER_MESSAGE)
        return NotLeaderError(f"Cannot {what} since it is not assigned to this member",
                              leader)

    def _read_config_to_end(self) -> ClusterConfigState:
        try:
            self.config_store.refresh(self.config.worker_sync_timeout_ms / 1000 + 10)
        except ConnectError as exc:
            raise RebalanceInProgressError(f"{STALE_CONFIG_MESSAGE}: {exc}") from exc
        return self.config_store.snapshot()

    def _get(self, name: str, snapshot: ClusterConfigState | None = None
             ) -> ClusterConfigState:
        snapshot = snapshot or self.config_store.snapshot()
        if not snapshot.contains(name):
            raise NotFoundError(f"Connector {name} not found")
        return snapshot

    # ================================================================== REST: connectors

    def connectors(self) -> list[str]:
        return self.config_store.snapshot().connectors()

    def connector_info(self, name: str) -> ConnectorInfo:
        snapshot = self._get(name)
        config = snapshot.connector_configs[name]
        return ConnectorInfo(name, self._masked(config), snapshot.tasks(name),
                             self._type(config))

    def _masked(self, config: Mapping[str, str]) -> dict[str, str]:
        return mask_config(config, secret_keys(self.worker.plugins, config))

    def _type(self, config: Mapping[str, str]) -> str:
        return connector_type_of(self.worker.plugins, config)

    def connector_config(self, name: str) -> dict[str, str]:
        return self._masked(self._get(name).connector_configs[name])

    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool, initial_state: TargetState | None = None
                             ) -> tuple[bool, ConnectorInfo]:
        self._require_leader("Only the leader can update connector configs")
        config = {**{k: str(v) for k, v in config.items()}, "name": name}
        config = restore_masked(self.worker.plugins, config,
                                self._read_config_to_end().connector_configs.get(name))
        infos = self.validate_connector_config(config)
        if infos["error_count"]:
            raise BadRequestError(
                f"Connector configuration is invalid and contains the following "
                f"{infos['error_count']} error(s):\n" + "\n".join(
                    e for c in infos["configs"] for e in c["value"]["errors"]),
                config_infos=infos)
        with self._write_lock:
            snapshot = self._read_config_to_end()
            exists = snapshot.contains(name)
            if exists and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            self.config_store.put_connector_config(
                name, config, None if exists else initial_state)
        log.info("%s connector %s", "updated" if exists else "created", name)
        return not exists, self.connector_info(name)

    def patch_connector_config(self, name: str,
                               patch: Mapping[str, str | None]) -> ConnectorInfo:
        self._require_leader("Only the leader can update connector configs")
        merged = dict(self._get(name, self._read_config_to_end()).connector_configs[name])
        for k, v in patch.items():
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = v
        return self.put_connector_config(name, merged, allow_replace=True)[1]

    def delete_connector(self, name: str) -> None:
        self._require_leader("Only the leader can delete connectors")
        with self._write_lock:
            self._get(name, self._read_config_to_end())
            self.config_store.remove_connector_config(name)
        try:
            self.status_store.delete_connector(name, worker_id=self.worker_id,
                                               generation=self._generation)
        except ConnectError as exc:
            log.warning("deleting the statuses of connector %s failed: %s", name, exc)
        log.info("deleted connector %s", name)

    def connector_status(self, name: str) -> ConnectorStateInfo:
        snapshot = self._get(name)
        status = self.status_store.get(name)
        connector = (ConnectorState(status.state.value, status.worker_id, status.trace)
                     if status is not None else ConnectorState(State.UNASSIGNED.value, ""))
        return ConnectorStateInfo(name, connector, self._task_states(snapshot, name),
                                  self._type(snapshot.connector_configs[name]))

    def _task_states(self, snapshot: ClusterConfigState, name: str) -> list[TaskState]:
        by_id = {s.id.task: s for s in self.status_store.get_all(name)}
        out = []
        for tid in snapshot.tasks(name):
            s = by_id.get(tid.task)
            out.append(TaskState(tid.task, s.state.value, s.worker_id, s.trace) if s
                       else TaskState(tid.task, State.UNASSIGNED.value, ""))
        return out

    def task_status(self, name: str, task: int) -> TaskState:
        snapshot = self._get(name)
        for state in self._task_states(snapshot, name):
            if state.id == task:
                return state
        raise NotFoundError(f"Task {name}-{task} not found")

    def task_configs(self, name: str) -> list[TaskInfo]:
        snapshot = self._get(name)
        config = snapshot.connector_configs[name]
        secrets = secret_keys(self.worker.plugins, config)
        return [TaskInfo(tid, mask_task_config(snapshot.task_configs.get(tid, {}), config,
                                               secrets))
                for tid in snapshot.tasks(name)]

    def _set_target_state(self, name: str, state: TargetState) -> None:
        self._require_leader("Only the leader can change target states")
        with self._write_lock:
            self._get(name, self._read_config_to_end())
            if state is TargetState.STOPPED:
                # Task configs first, as Kafka writes them: a RUNNING connector with no
                # tasks is harmless if the target state write then fails; a STOPPED one
                # with tasks is not.
                self.config_store.put_task_configs(name, [])
            self.config_store.put_target_state(name, state)
            self._read_config_to_end()
        log.info("connector %s: target state %s", name, state.value)

    def pause_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.STOPPED)

    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        """Without flags: the connector instance restarts on its worker (forwarded there).
        With flags (KIP-745): the leader writes a restart request to the config topic and
        every worker restarts its part of it; the answer is the plan."""
        self._get(name)
        if not include_tasks and not only_failed:
            self._on_owner(name, "restart connector", lambda: self._restart_here(name))
            return None
        self._require_leader("Only the leader can process restart requests")
        current = self.connector_status(name)
        restart_conn = not only_failed or current.connector.state == State.FAILED
        tasks = {t.id for t in current.tasks
                 if include_tasks and (not only_failed or t.state == State.FAILED)}
        plan = ConnectorStateInfo(
            name, ConnectorState(State.RESTARTING.value, current.connector.worker_id)
            if restart_conn else current.connector,
            [TaskState(t.id, State.RESTARTING.value, t.worker_id) if t.id in tasks else t
             for t in current.tasks], current.type)
        with self._write_lock:
            self.config_store.put_restart_request(name, include_tasks, only_failed)
        return plan

    def _restart_here(self, name: str) -> None:
        if self.work.restart_connector(name):
            self._schedule_reconfigure(name)

    def restart_task(self, name: str, task: int) -> None:
        snapshot = self._get(name)
        tid = ConnectorTaskId(name, task)
        if tid not in snapshot.tasks(name):
            raise NotFoundError(f"Task {name}-{task} not found")
        self._on_owner(tid, "restart task", lambda: self.work.restart_task(tid))

    def _on_owner(self, work: str | ConnectorTaskId, what: str,
                  action: Callable[[], None]) -> None:
        """Run ``action`` on the herder thread if this worker runs ``work``; otherwise
        raise where the request must go."""
        self._await_rebalance()

        def run() -> None:
            owned = (self.work.owns_connector(work) if isinstance(work, str)
                     else self.work.owns_task(work))
            if not owned:
                raise self._owner_error(work, what)
            action()

        self._call(run)

    # ================================================================== REST: offsets, topics

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        config = self._get(name).connector_configs[name]
        return connector_offsets(self.worker, name, self._type(config) == "sink")

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        config = self._stopped(name)
        entries = [(e["partition"], e.get("offset")) for e in offsets]
        return modify_offsets(self.worker, name, config, entries, reset=False)

    def reset_connector_offsets(self, name: str) -> str:
        config = self._stopped(name)
        entries = [(e["partition"], None) for e in self.connector_offsets(name)]
        return modify_offsets(self.worker, name, config, entries, reset=True)

    def _stopped(self, name: str) -> dict[str, str]:
        self._require_leader("Only the leader can modify connector offsets")
        snapshot = self._get(name, self._read_config_to_end())
        if snapshot.target_state(name) is not TargetState.STOPPED or snapshot.tasks(name):
            raise BadRequestError(f"Connectors must be in the STOPPED state before their "
                                  f"offsets can be modified. Connector {name} is not: stop "
                                  f"it with PUT /connectors/{name}/stop first.")
        return snapshot.connector_configs[name]

    def connector_active_topics(self, name: str) -> list[str]:
        self._get(name)
        return [t.topic for t in self.status_store.get_all_topics(name)]

    def reset_connector_active_topics(self, name: str) -> None:
        self._get(name)
        self.status_store.reset_active_topics(name)

    # ================================================================== REST: plugins

    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        return validate_connector_config(self.worker.plugins, config)

    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        return self.worker.plugins.plugin_infos(connectors_only)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        return plugin_config(self.worker.plugins, plugin)


def _work_shape(snapshot: ClusterConfigState) -> dict[str, int]:
    """Each connector and how many tasks it has (0 while inconsistent): what the assignor
    distributes."""
    return {c: len(snapshot.tasks(c)) for c in snapshot.connectors()}
