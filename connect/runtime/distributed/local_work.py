"""``LocalWork``: the connectors and tasks one distributed worker runs, through its ``Worker``.

The herder thread owns it: every method except the task and connector callbacks is
called on that thread only, so the ``Worker`` is only ever driven from there. Work is
brought in line with two inputs, incrementally:

* the config snapshot (``ClusterConfigState``): a connector whose config changed is
  restarted; a target state change pauses, resumes, stops or starts; tasks whose task
  configs were committed again (a new task-config generation) restart with the new ones;
  work of deleted connectors stops and its statuses are deleted;
* the assignment: only what is assigned runs; what is revoked stops, what is newly
  assigned starts. Nothing else is touched.

Statuses go to the status topic with ``put_safe`` and the current group generation, so a
worker of an older generation cannot overwrite a newer worker's status. Reports of tasks
this worker no longer runs (a thread that was abandoned, a task being stopped after its
connector was deleted) are dropped. Source offsets of such tasks are dropped as well
(``OwnedOffsetStore``).

Task configs are generated here (the connector instance runs here) and handed to the
herder, which publishes them through the leader.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connect.api.errors import ConnectError
from connect.runtime.config_providers import has_placeholder
from connect.runtime.distributed.config_store import (
    ClusterConfigState,
    ConfigBackingStore,
    RestartRequest,
)
from connect.runtime.distributed.protocol import ConnectorsAndTasks
from connect.runtime.distributed.status_store import (
    ConnectorStatus,
    State,
    StatusBackingStore,
    TaskStatus,
    TopicStatus,
)
from connect.runtime.herder import ConnectorTaskId, TargetState
from connect.runtime.offset_store import OffsetStore
from connect.runtime.secrets import scrub
from connect.runtime.worker import Worker

__all__ = ["LocalWork", "OwnedOffsetStore", "task_configs_changed"]

log = logging.getLogger(__name__)


def task_configs_changed(snapshot: ClusterConfigState, name: str,
                         configs: list[dict[str, str]]) -> bool:
    """Whether ``configs`` must be written for connector ``name`` (Kafka's check): the
    connector is inconsistent, its task configs differ, or its config changed since task
    configs were last committed (tasks must restart with the new connector config even
    when the connector gives the same task configs)."""
    if name in snapshot.inconsistent_connectors:
        return True
    current = snapshot.task_config_list(name)
    if len(current) != snapshot.task_count(name) or current != configs:
        return True
    return snapshot.applied_connector_configs.get(name) != snapshot.connector_config(name)


class OwnedOffsetStore(OffsetStore):
    """The worker's offset store, refusing source offsets of connectors none of whose
    tasks this worker runs: a task thread that was abandoned, or that outlived the
    worker's membership, must not move offsets its successor relies on.

    It shares the state (cache, positions, lock) of the store it wraps, so writes made
    through ``unguarded`` (the herder's offset alter and reset) are seen by both."""

    def __init__(self, inner: OffsetStore, may_write: Callable[[str], bool]) -> None:
        # No super().__init__(): the topic exists; adopt the inner store's state instead.
        self.__dict__.update(inner.__dict__)
        self.unguarded = inner
        self._may_write = may_write

    def write(self, connector: str,
              offsets: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        if not self._may_write(connector):
            log.warning("dropping %d source offsets of connector %s: none of its tasks runs "
                        "on this worker any more", len(offsets), connector)
            return
        self.unguarded.write(connector, offsets)


@dataclass
class _OwnedConnector:
    config: dict[str, str]   # the config the instance was started with
    target: TargetState      # the target state it was brought to
    running: bool            # the instance runs (False: FAILED, or target STOPPED)


@dataclass
class _OwnedTask:
    generation: int          # its connector's task-config generation at start


class LocalWork:
    """See the module docstring. ``generation`` gives the current group generation;
    ``on_reconfigure(name)`` and ``on_connector_error(name, error)`` are called from
    connector threads and must only queue work for the herder thread."""

    def __init__(self, worker: Worker, config_store: ConfigBackingStore,
                 status_store: StatusBackingStore, worker_id: str, *,
                 generation: Callable[[], int],
                 on_reconfigure: Callable[[str], None],
                 on_connector_error: Callable[[str, BaseException], None]) -> None:
        self.worker = worker
        self.config_store = config_store
        self.status = status_store
        self.worker_id = worker_id
        self._generation = generation
        self._on_reconfigure = on_reconfigure
        self._on_connector_error = on_connector_error
        self.snapshot = ClusterConfigState()
        # The herder thread changes _connectors and _tasks under _lock; other threads
        # only read them under it. It never holds _lock while waiting for task threads.
        self._lock = threading.Lock()
        self._connectors: dict[str, _OwnedConnector] = {}
        self._tasks: dict[ConnectorTaskId, _OwnedTask] = {}
        if not isinstance(worker.offsets, OwnedOffsetStore):
            worker.offsets = OwnedOffsetStore(worker.offsets, self._runs_tasks_of)

    # ------------------------------------------------------------------ views

    def running(self) -> ConnectorsAndTasks:
        with self._lock:
            return ConnectorsAndTasks.of(self._connectors, self._tasks)

    def owns_connector(self, name: str) -> bool:
        with self._lock:
            return name in self._connectors

    def owns_task(self, task: ConnectorTaskId) -> bool:
        with self._lock:
            return task in self._tasks

    def connector_running(self, name: str) -> bool:
        entry = self._connectors.get(name)
        return entry is not None and entry.running and name in self.worker.connectors

    def _runs_tasks_of(self, connector: str) -> bool:
        with self._lock:
            return any(t.connector == connector for t in self._tasks)

    # ------------------------------------------------------------------ reconciling

    def update(self, snapshot: ClusterConfigState, assigned: ConnectorsAndTasks, *,
               start: bool) -> list[str]:
        """Bring the running work in line with ``snapshot`` and ``assigned`` (see the
        module docstring); with ``start`` False nothing new starts (the config topic is
        not read far enough yet). Returns the connectors whose instance (re)started, whose
        task configs must be generated and published."""
        old, self.snapshot = self.snapshot, snapshot
        # 1. Work no longer assigned or no longer configured stops.
        deleted = {c for c in self.running().connectors | {t.connector for t in self._task_ids()}
                   if not snapshot.contains(c)}
        with self._lock:
            tasks = list(self._tasks)
        gone = [t for t in tasks if t not in assigned.tasks
                or t not in set(snapshot.tasks(t.connector))
                or snapshot.target_state(t.connector) is TargetState.STOPPED]
        self.stop_tasks(gone)
        for name in [c for c in self._connectors if c not in assigned.connectors
                     or not snapshot.contains(c)]:
            self._stop_connector(name)
        for name in deleted:
            self._forget_deleted(name, [t for t in gone if t.connector == name])
        restarted: list[str] = []
        # 2. Connectors whose config or target state changed.
        for name, entry in list(self._connectors.items()):
            config, target = snapshot.connector_config(name), snapshot.target_state(name)
            if config != entry.config:
                log.info("the config of connector %s changed; restarting it", name)
                self._stop_connector(name)
                if self._start_connector(name):
                    restarted.append(name)
            elif (target is not None and target != entry.target
                  and self._transition(name, entry, target)):
                restarted.append(name)
        # 3. Tasks whose task configs were committed again, or whose target changed.
        with self._lock:
            owned = dict(self._tasks)
        renewed = [tid for tid, task in owned.items()
                   if snapshot.task_config_generations.get(tid.connector, -1) != task.generation]
        if renewed:
            log.info("tasks %s have new task configs; restarting them",
                     ", ".join(map(str, renewed)))
            self.stop_tasks(renewed)  # together: one graceful timeout, not one per task
            for tid in renewed:
                self._start_task(tid)
        for tid in owned:
            if tid not in renewed:
                previous = old.target_state(tid.connector)
                target = snapshot.target_state(tid.connector)
                if target is not previous and target is TargetState.PAUSED:
                    self.worker.pause_task(tid)
                elif target is not previous and target is TargetState.STARTED:
                    self.worker.resume_task(tid)
        # 4. Newly assigned work starts.
        if start:
            for name in sorted(assigned.connectors - set(self._connectors)):
                if snapshot.contains(name) and self._start_connector(name):
                    restarted.append(name)
            for tid in sorted(assigned.tasks - set(self._task_ids()),
                              key=lambda t: (t.connector, t.task)):
                self._start_task(tid)
        return restarted

    def _task_ids(self) -> list[ConnectorTaskId]:
        with self._lock:
            return list(self._tasks)

    def _transition(self, name: str, entry: _OwnedConnector, target: TargetState) -> bool:
        """Move an owned connector to a new target state; True if its instance started."""
        previous, entry.target = entry.target, target
        log.info("connector %s: target state %s -> %s", name, previous.value, target.value)
        if target is TargetState.STOPPED:
            self.worker.stop_connector(name)
            entry.running = False
            self._connector_status(name, State.STOPPED)
            return False
        if not entry.running:  # from STOPPED, or a FAILED connector being resumed
            with self._lock:
                self._connectors.pop(name, None)
            return self._start_connector(name)
        self._connector_status(name, State.PAUSED if target is TargetState.PAUSED
                               else State.RUNNING)
        return False

    # ------------------------------------------------------------------ connectors

    def _start_connector(self, name: str) -> bool:
        """Start an assigned connector as its target state says; True if its instance
        runs (its task configs should be generated)."""
        config = self.snapshot.connector_config(name)
        if config is None:
            return False
        target = self.snapshot.target_state(name) or TargetState.STARTED
        entry = _OwnedConnector(dict(config), target, running=False)
        with self._lock:
            self._connectors[name] = entry
        if target is TargetState.STOPPED:
            self._connector_status(name, State.STOPPED)
            return False
        try:
            self.worker.start_connector(name, config, self._on_reconfigure,
                                        self._on_connector_error)
        except Exception as exc:  # the connector's own failure: FAILED with its trace
            secrets = self.worker.secret_values(config)
            log.error("connector %s failed to start: %s", name, scrub(str(exc), secrets))
            self._connector_status(name, State.FAILED, scrub(_trace(exc), secrets))
            return False
        entry.running = True
        self._connector_status(name, State.PAUSED if target is TargetState.PAUSED
                               else State.RUNNING)
        return True

    def _stop_connector(self, name: str) -> None:
        with self._lock:
            self._connectors.pop(name, None)
        self.worker.stop_connector(name)

    def fail_connector(self, name: str, error: BaseException) -> None:
        """The connector raised an error through its context: FAILED, instance stopped."""
        entry = self._connectors.get(name)
        if entry is None:
            return
        entry.running = False
        self.worker.stop_connector(name)
        config = self.snapshot.connector_config(name) or {}
        self._connector_status(name, State.FAILED,
                               scrub(_trace(error), self.worker.secret_values(config)))

    def generate_task_configs(self, name: str) -> list[dict[str, str]] | None:
        """The running connector's task configs, with every key whose raw connector value
        holds a ``${provider:...}`` placeholder put back to that placeholder (so resolved
        secrets never reach the config topic); None if the instance does not run here or
        its target is STOPPED. A connector failing here is FAILED."""
        config = self.snapshot.connector_config(name)
        if (config is None or not self.connector_running(name)
                or self.snapshot.target_state(name) is TargetState.STOPPED):
            return None
        raw = {k: v for k, v in config.items() if has_placeholder(v)}
        try:
            generated = self.worker.task_configs(name, int(config.get("tasks.max", "1")))
        except Exception as exc:  # the connector's failure
            log.error("connector %s failed to generate task configs: %s", name, exc)
            self.fail_connector(name, exc)
            return None
        return [{**tc, **{k: v for k, v in raw.items() if k in tc}} for tc in generated]

    # ------------------------------------------------------------------ tasks

    def _start_task(self, tid: ConnectorTaskId) -> None:
        config = self.snapshot.connector_config(tid.connector)
        task_config = self.snapshot.task_config(tid)
        target = self.snapshot.target_state(tid.connector)
        if (config is None or task_config is None or target is TargetState.STOPPED
                or tid not in self.snapshot.tasks(tid.connector)):
            log.debug("task %s is assigned but has no config (yet); not starting it", tid)
            return
        generation = self.snapshot.task_config_generations.get(tid.connector, -1)
        with self._lock:
            self._tasks[tid] = _OwnedTask(generation)
        self.worker.start_task(tid, config, task_config, self._on_task_status,
                               paused=target is TargetState.PAUSED,
                               on_topic=lambda topic: self._on_topic(tid, topic))

    def stop_tasks(self, ids: Iterable[ConnectorTaskId]) -> None:
        """Stop tasks (their offsets are committed) and forget them."""
        ids = list(ids)
        if not ids:
            return
        abandoned = self.worker.stop_tasks(ids)
        with self._lock:
            for tid in ids:
                self._tasks.pop(tid, None)
        if abandoned:
            log.warning("tasks %s did not stop in time; their threads are abandoned and "
                        "whatever they report is ignored", ", ".join(map(str, abandoned)))

    def stop(self, work: ConnectorsAndTasks) -> None:
        """Stop these connectors and tasks (revoked work): tasks first, as Kafka does."""
        self.stop_tasks(t for t in work.tasks if self.owns_task(t))
        for name in work.connectors:
            if name in self._connectors:
                self._stop_connector(name)

    def stop_all(self) -> None:
        self.stop(self.running())

    def restart_connector(self, name: str) -> bool:
        """Restart an owned connector's instance; True if it runs again (generate task
        configs)."""
        if name not in self._connectors:
            return False
        self._stop_connector(name)
        return self._start_connector(name)

    def restart_task(self, tid: ConnectorTaskId) -> None:
        self.stop_tasks([tid])
        self._start_task(tid)

    def restart(self, request: RestartRequest) -> bool:
        """KIP-745 for the part of ``request`` that runs here: the connector unless
        ``only_failed`` and it is not FAILED; with ``include_tasks`` its tasks here, only
        the FAILED ones with ``only_failed``. Returns True if the connector instance
        restarted (generate task configs)."""
        name = request.connector
        if not self.snapshot.contains(name):
            return False
        status = self.status.get(name)
        restart_connector = name in self._connectors and (
            not request.only_failed or (status is not None and status.state == State.FAILED))
        tasks = []
        if request.include_tasks:
            for tid in sorted((t for t in self._task_ids() if t.connector == name),
                              key=lambda t: t.task):
                task_status = self.status.get_task(tid)
                if not request.only_failed or (task_status is not None
                                               and task_status.state == State.FAILED):
                    tasks.append(tid)
        if restart_connector:
            self._connector_status(name, State.RESTARTING)
        for tid in tasks:
            self._task_status(tid, State.RESTARTING)
        log.info("restarting %s%s on request", "connector " + name if restart_connector else "",
                 f" tasks {', '.join(map(str, tasks))}" if tasks else "")
        restarted = self.restart_connector(name) if restart_connector else False
        for tid in tasks:
            self.restart_task(tid)
        return restarted

    # ------------------------------------------------------------------ statuses

    def _connector_status(self, name: str, state: State, trace: str | None = None) -> None:
        self._put(ConnectorStatus(name, state, self.worker_id, self._generation(), trace))

    def _task_status(self, tid: ConnectorTaskId, state: State, trace: str | None = None
                     ) -> None:
        self._put(TaskStatus(tid, state, self.worker_id, self._generation(), trace))

    def _put(self, status: ConnectorStatus | TaskStatus) -> None:
        try:
            self.status.put_safe(status)
        except ConnectError as exc:  # the status store is stopped: shutting down
            log.debug("status %s not written: %s", status, exc)

    def _on_task_status(self, tid: ConnectorTaskId, state: str, trace: str | None) -> None:
        """Task threads report here."""
        with self._lock:
            if tid not in self._tasks:
                return  # not ours any more: an abandoned thread, or a deleted connector
        if state == State.UNASSIGNED and not self.config_store.contains(tid.connector):
            return
        self._task_status(tid, State(state), trace)

    def _on_topic(self, tid: ConnectorTaskId, topic: str) -> None:
        """KIP-558: task threads tell which topics they use (rarely: once per topic and
        task instance); a topic is recorded unless already recorded."""
        with self._lock:
            if tid not in self._tasks:
                return
        if self.status.get_topic(tid.connector, topic) is None:
            try:
                self.status.put_topic(TopicStatus(topic, tid.connector, tid.task,
                                                  int(time.time() * 1000)))
            except ConnectError as exc:
                log.debug("active topic %s of %s not recorded: %s", topic, tid, exc)

    def _forget_deleted(self, name: str, stopped: list[ConnectorTaskId]) -> None:
        """Tombstones for the statuses of a deleted connector's work that ran here."""
        generation = self._generation()
        for tid in stopped:
            self._put_raw(TaskStatus(tid, State.DESTROYED, self.worker_id, generation))

    def _put_raw(self, status: ConnectorStatus | TaskStatus) -> None:
        try:
            self.status.put(status)
        except ConnectError as exc:
            log.debug("status %s not written: %s", status, exc)


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
