"""StandaloneHerder: the Herder of one worker. Connector configs live in memory and, when
the worker sets ``connect.configs.file`` (Ferry only), in that JSON file, so connectors
survive a restart. Status is tracked in memory. State changes are serialised by one lock;
connectors start synchronously on the calling thread, tasks on their own threads.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from connect.api.errors import AlreadyExistsError, NotFoundError
from connect.runtime.config_providers import has_placeholder
from connect.runtime.connector_validation import (
    connector_type_of,
    plugin_config,
    validate_connector_config,
)
from connect.runtime.errors import BadRequestError
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
from connect.runtime.secrets import (
    mask_config,
    mask_task_config,
    restore_masked,
    scrub,
    secret_keys,
)
from connect.runtime.server_info import log_cluster_id, package_version
from connect.runtime.worker import Worker

__all__ = ["StandaloneHerder"]

log = logging.getLogger(__name__)


@dataclass
class _Connector:
    config: dict[str, str]
    target: TargetState = TargetState.STARTED
    task_configs: list[dict[str, str]] = field(default_factory=list)
    state: ConnectorState | None = None


class StandaloneHerder(Herder):
    def __init__(self, worker: Worker, worker_id: str, *, version: str | None = None) -> None:
        self.worker = worker
        self.worker_id = worker_id
        self._version = version or package_version()
        self._lock = threading.RLock()
        self._connectors: dict[str, _Connector] = {}
        # Task threads report status under _status_lock only: they must never wait for
        # _lock, which the herder holds while it waits for those threads to stop.
        self._status_lock = threading.Lock()
        self._task_status: dict[ConnectorTaskId, TaskState] = {}
        #: KIP-558 active topics by connector (in memory, as Kafka's standalone worker).
        self._active_topics: dict[str, set[str]] = {}
        self._file = worker.config.connect_configs_file
        self._started = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        with self._lock:
            if self._file and os.path.exists(self._file):
                with open(self._file, encoding="utf-8") as fh:
                    saved = json.load(fh)
                for name, entry in saved.items():
                    self._connectors[name] = _Connector(entry["config"],
                                                        TargetState(entry["target"]))
            for name in list(self._connectors):
                self._apply(name)
            self._started = True

    def stop(self) -> None:
        with self._lock:
            for name in list(self._connectors):
                self._shutdown(name)
            self.worker.stop()

    def server_info(self) -> ServerInfo:
        return ServerInfo(self._version, "", log_cluster_id(self.worker.backend))

    def health(self) -> tuple[str, str]:
        if not self._started:
            return "starting", "Worker is still starting up."
        return "healthy", "Worker has completed startup and is ready to handle requests."

    # ------------------------------------------------------------------ internals
    def _get(self, name: str) -> _Connector:
        c = self._connectors.get(name)
        if c is None:
            raise NotFoundError(f"Connector {name} not found")
        return c

    def _save(self) -> None:
        if not self._file:
            return
        data = {n: {"config": c.config, "target": c.target.value}
                for n, c in self._connectors.items()}
        tmp = self._file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self._file)  # atomic: a crash never leaves half a file

    def _task_ids(self, name: str) -> list[ConnectorTaskId]:
        with self._status_lock:
            return sorted((t for t in self._task_status if t.connector == name),
                          key=lambda t: t.task)

    def _on_task_status(self, tid: ConnectorTaskId, state: str, trace: str | None) -> None:
        with self._status_lock:
            # Only known tasks: an abandoned thread of a removed task must not resurrect it.
            if tid in self._task_status:
                self._task_status[tid] = TaskState(tid.task, state, self.worker_id, trace)

    def _shutdown(self, name: str) -> None:
        """Stop tasks and the connector instance (offsets are flushed by the tasks)."""
        ids = self._task_ids(name)
        self.worker.stop_tasks(ids)
        self.worker.stop_connector(name)

    def _apply(self, name: str) -> None:
        """Bring the connector to its target state from scratch."""
        c = self._connectors[name]
        self._shutdown(name)
        self._forget_tasks(name)
        if c.target is TargetState.STOPPED:
            c.state = ConnectorState("STOPPED", self.worker_id)
            c.task_configs = []
            return
        try:
            self.worker.start_connector(name, c.config, self._request_reconfigure,
                                        self._connector_error)
            c.task_configs = self._new_task_configs(name, c)
        except Exception as exc:  # the connector's own failure: FAILED with its trace
            c.state = ConnectorState("FAILED", self.worker_id, self._trace(exc, c.config))
            return
        c.state = ConnectorState("PAUSED" if c.target is TargetState.PAUSED else "RUNNING",
                                 self.worker_id)
        self._start_tasks(name)

    def _new_task_configs(self, name: str, c: _Connector) -> list[dict[str, str]]:
        """The running connector's task configs with every key whose raw connector value
        holds a ``${provider:...}`` placeholder put back to that placeholder (Kafka's
        reverse transform): the connector saw resolved values and usually copies them into
        its task configs, which the REST API shows; tasks resolve them again at start."""
        raw = {k: v for k, v in c.config.items() if has_placeholder(v)}
        return [{**tc, **{k: v for k, v in raw.items() if k in tc}}
                for tc in self.worker.task_configs(name, int(c.config.get("tasks.max", 1)))]

    def _start_tasks(self, name: str) -> None:
        c = self._connectors[name]
        for i, tc in enumerate(c.task_configs):
            self._start_task(name, i, tc)

    def _start_task(self, name: str, index: int, task_config: dict[str, str]) -> None:
        """Start one task, paused from the outset when the connector's target is PAUSED."""
        c = self._connectors[name]
        tid = ConnectorTaskId(name, index)
        with self._status_lock:
            self._task_status[tid] = TaskState(index, "UNASSIGNED", self.worker_id)
        self.worker.start_task(tid, c.config, task_config, self._on_task_status,
                               paused=c.target is TargetState.PAUSED,
                               on_topic=lambda topic: self._on_topic(name, topic))

    def _forget_tasks(self, name: str) -> None:
        """Drop the stopped tasks' status, so late reports of their threads are ignored."""
        with self._status_lock:
            for tid in [t for t in self._task_status if t.connector == name]:
                del self._task_status[tid]

    def _on_topic(self, name: str, topic: str) -> None:
        with self._status_lock:  # task threads: never _lock
            self._active_topics.setdefault(name, set()).add(topic)

    def _replace_tasks(self, name: str, task_configs: list[dict[str, str]]) -> None:
        """Stop every task of ``name`` and start ``task_configs`` instead."""
        self.worker.stop_tasks(self._task_ids(name))
        self._forget_tasks(name)
        self._connectors[name].task_configs = task_configs
        self._start_tasks(name)

    def _request_reconfigure(self, name: str) -> None:
        # Called from the connector's own threads: do the work on a fresh thread so the
        # connector never waits on the herder's lock.
        threading.Thread(target=self._reconfigure, args=(name,), daemon=True,
                         name=f"reconfigure-{name}").start()

    def _reconfigure(self, name: str) -> None:
        with self._lock:
            c = self._connectors.get(name)
            if c is None or c.target is not TargetState.STARTED or name not in \
                    self.worker.connectors:
                return
            new = self._new_task_configs(name, c)
            if new != c.task_configs:
                self._replace_tasks(name, new)

    def _connector_error(self, name: str, error: BaseException) -> None:
        with self._lock:
            c = self._connectors.get(name)
            if c is not None:
                c.state = ConnectorState("FAILED", self.worker_id,
                                         self._trace(error, c.config))
                self.worker.stop_connector(name)

    # ------------------------------------------------------------------ connectors
    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def connector_info(self, name: str) -> ConnectorInfo:
        with self._lock:
            c = self._get(name)
            return ConnectorInfo(name, self._masked(c.config),
                                 [ConnectorTaskId(name, i) for i in range(len(c.task_configs))],
                                 self._type(c.config))

    def _trace(self, exc: BaseException, config: Mapping[str, str]) -> str:
        """A connector's failure trace without its config's secrets."""
        return scrub(_trace(exc), self.worker.secret_values(config))

    def _masked(self, config: Mapping[str, str]) -> dict[str, str]:
        return mask_config(config, secret_keys(self.worker.plugins, config))

    def _type(self, config: Mapping[str, str]) -> str:
        return connector_type_of(self.worker.plugins, config)

    def connector_config(self, name: str) -> dict[str, str]:
        with self._lock:
            return self._masked(self._get(name).config)

    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool, initial_state: TargetState | None = None
                             ) -> tuple[bool, ConnectorInfo]:
        config = {**{k: str(v) for k, v in config.items()}, "name": name}
        with self._lock:
            stored = self._connectors.get(name)
            config = restore_masked(self.worker.plugins, config,
                                    stored.config if stored else None)
        infos = self.validate_connector_config(config)
        if infos["error_count"]:
            raise BadRequestError(
                f"Connector configuration is invalid and contains the following "
                f"{infos['error_count']} error(s):\n" + "\n".join(
                    e for c in infos["configs"] for e in c["value"]["errors"]),
                config_infos=infos)
        with self._lock:
            existing = self._connectors.get(name)
            if existing is not None and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            if existing is None:
                self._connectors[name] = _Connector(config, initial_state or TargetState.STARTED)
            else:
                existing.config = config
            self._save()
            self._apply(name)
            return existing is None, self.connector_info(name)

    def patch_connector_config(self, name: str,
                               patch: Mapping[str, str | None]) -> ConnectorInfo:
        with self._lock:
            merged = dict(self._get(name).config)
        for k, v in patch.items():
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = v
        return self.put_connector_config(name, merged, allow_replace=True)[1]  # type: ignore[arg-type]

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._get(name)
            self._shutdown(name)
            self._forget_tasks(name)
            del self._connectors[name]
            with self._status_lock:
                self._active_topics.pop(name, None)
            self._save()

    def connector_status(self, name: str) -> ConnectorStateInfo:
        with self._lock:
            c = self._get(name)
            state = c.state or ConnectorState("UNASSIGNED", self.worker_id)
            tasks = [self._task_status[t] for t in self._task_ids(name)]
            return ConnectorStateInfo(name, state, tasks, self._type(c.config))

    def task_status(self, name: str, task: int) -> TaskState:
        with self._lock:
            self._get(name)
            found = self._task_status.get(ConnectorTaskId(name, task))
            if found is None:
                raise NotFoundError(f"Task {name}-{task} not found")
            return found

    def task_configs(self, name: str) -> list[TaskInfo]:
        with self._lock:
            c = self._get(name)
            secrets = secret_keys(self.worker.plugins, c.config)
            return [TaskInfo(ConnectorTaskId(name, i), mask_task_config(tc, c.config, secrets))
                    for i, tc in enumerate(c.task_configs)]

    def pause_connector(self, name: str) -> None:
        with self._lock:
            c = self._get(name)
            c.target = TargetState.PAUSED
            self._save()
            if name not in self.worker.connectors:
                self._apply(name)
                return
            c.state = ConnectorState("PAUSED", self.worker_id)
            for tid in self._task_ids(name):
                self.worker.pause_task(tid)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            c = self._get(name)
            previous, c.target = c.target, TargetState.STARTED
            self._save()
            if previous is TargetState.STOPPED or name not in self.worker.connectors:
                self._apply(name)
                return
            c.state = ConnectorState("RUNNING", self.worker_id)
            for tid in self._task_ids(name):
                self.worker.resume_task(tid)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            self._get(name).target = TargetState.STOPPED
            self._save()
            self._apply(name)

    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        """Kafka's rules (KIP-745): without flags only the connector instance restarts
        (its tasks too only if it now gives other task configs). Otherwise the connector
        restarts unless ``only_failed`` and it is not FAILED; tasks restart only with
        ``include_tasks``, and only FAILED ones with ``only_failed``. The answer is the
        status as planned: the instances being restarted show RESTARTING."""
        with self._lock:
            c = self._get(name)
            if not include_tasks and not only_failed:
                self._restart_connector_instance(name)
                return None
            current = self.connector_status(name)
            restart_conn = not only_failed or current.connector.state == "FAILED"
            tasks = [t.id for t in current.tasks if include_tasks and (
                not only_failed or t.state == "FAILED")]
            restarting = ConnectorState("RESTARTING", self.worker_id)
            plan = ConnectorStateInfo(
                name, restarting if restart_conn else current.connector,
                [TaskState(t.id, "RESTARTING", self.worker_id) if t.id in tasks else t
                 for t in current.tasks], current.type)
            if restart_conn and self._restart_connector_instance(name):
                return plan  # every task was started afresh already
            if c.target is not TargetState.STOPPED:
                self.worker.stop_tasks([ConnectorTaskId(name, i) for i in tasks])
                for i in tasks:
                    self._start_task(name, i, c.task_configs[i])
            return plan

    def _restart_connector_instance(self, name: str) -> bool:
        """Restart the connector instance alone; True if its tasks were (re)started too
        (nothing was running to keep, or the connector now gives other task configs)."""
        c = self._connectors[name]
        if c.target is TargetState.STOPPED or not self._task_ids(name):
            self._apply(name)
            return True
        self.worker.stop_connector(name)
        try:
            self.worker.start_connector(name, c.config, self._request_reconfigure,
                                        self._connector_error)
            new = self._new_task_configs(name, c)
        except Exception as exc:  # the connector fails; its tasks keep running, as in Kafka
            c.state = ConnectorState("FAILED", self.worker_id, self._trace(exc, c.config))
            return False
        c.state = ConnectorState("PAUSED" if c.target is TargetState.PAUSED else "RUNNING",
                                 self.worker_id)
        if new == c.task_configs:
            return False
        self._replace_tasks(name, new)
        return True

    def restart_task(self, name: str, task: int) -> None:
        with self._lock:
            c = self._get(name)
            tid = ConnectorTaskId(name, task)
            if tid not in self._task_status or task >= len(c.task_configs):
                raise NotFoundError(f"Task {name}-{task} not found")
            self.worker.stop_tasks([tid])
            self._start_task(name, task, c.task_configs[task])

    # ------------------------------------------------------------------ offsets and topics
    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            c = self._get(name)
            return connector_offsets(self.worker, name, self._type(c.config) == "sink")

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        with self._lock:
            c = self._stopped(name)
            entries = [(e["partition"], e.get("offset")) for e in offsets]
            return self._modify_offsets(name, c, entries, reset=False)

    def reset_connector_offsets(self, name: str) -> str:
        with self._lock:
            c = self._stopped(name)
            entries = [(e["partition"], None) for e in self.connector_offsets(name)]
            return self._modify_offsets(name, c, entries, reset=True)

    def _stopped(self, name: str) -> _Connector:
        c = self._get(name)
        if c.target is not TargetState.STOPPED:
            raise BadRequestError(f"Connectors must be in the STOPPED state before their "
                                  f"offsets can be modified. Connector {name} is not: stop "
                                  f"it with PUT /connectors/{name}/stop first.")
        return c

    def _modify_offsets(self, name: str, c: _Connector,
                        entries: list[tuple[dict[str, Any], Any]], *, reset: bool) -> str:
        return modify_offsets(self.worker, name, c.config, entries, reset=reset)

    # Active topics (KIP-558): a source's topics once it produced to them, a sink's once
    # they were assigned to one of its tasks (Kafka: once a record was consumed).
    def connector_active_topics(self, name: str) -> list[str]:
        with self._lock:
            self._get(name)
            with self._status_lock:
                return sorted(self._active_topics.get(name, ()))

    def reset_connector_active_topics(self, name: str) -> None:
        with self._lock:
            self._get(name)
            with self._status_lock:
                self._active_topics.pop(name, None)

    # ------------------------------------------------------------------ plugins
    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        return validate_connector_config(self.worker.plugins, config)

    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        return self.worker.plugins.plugin_infos(connectors_only)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        return plugin_config(self.worker.plugins, plugin)


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
