"""An in-memory ``Herder`` for the REST contract tests: a real implementation of the ABC
with just enough rules (validation, target states, offsets need STOPPED) that the REST
layer's mapping of every result and error can be checked."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from connect.api.errors import AlreadyExistsError, NotFoundError
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

WORKER = "127.0.0.1:8083"
SOURCE = "org.example.DataGenSourceConnector"
SINK = "org.example.LogSinkConnector"
PLUGINS = {SOURCE: "source", SINK: "sink"}
_STATE_OF_TARGET = {TargetState.STARTED: "RUNNING", TargetState.PAUSED: "PAUSED",
                    TargetState.STOPPED: "STOPPED"}


class FakeHerder(Herder):
    def __init__(self) -> None:
        self.worker_id = WORKER
        self.configs: dict[str, dict[str, str]] = {}
        self.targets: dict[str, TargetState] = {}
        self.failed_tasks: dict[str, set[int]] = {}
        self.offsets: dict[str, list[dict[str, Any]]] = {}
        self.topics: dict[str, list[str]] = {}
        self.calls: list[tuple[str, Any]] = []
        self.health_status = ("healthy", "Worker has completed startup and is ready to "
                                         "handle requests.")
        self.health_gate: threading.Event | None = None
        self.started = False

    # lifecycle
    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.started = False

    def server_info(self) -> ServerInfo:
        return ServerInfo("0.1.0", "abc123", "cluster-1")

    def health(self) -> tuple[str, str]:
        if self.health_gate is not None:
            self.health_gate.wait(10)
        return self.health_status

    # connectors
    def _config(self, name: str) -> dict[str, str]:
        if name not in self.configs:
            raise NotFoundError(f"Connector {name} not found")
        return self.configs[name]

    def connectors(self) -> list[str]:
        return sorted(self.configs)

    def _tasks(self, name: str) -> list[ConnectorTaskId]:
        if self.targets[name] is TargetState.STOPPED:
            return []
        return [ConnectorTaskId(name, i) for i in range(int(self.configs[name]["tasks.max"]))]

    def connector_info(self, name: str) -> ConnectorInfo:
        config = self._config(name)
        return ConnectorInfo(name, dict(config), self._tasks(name),
                             PLUGINS.get(config["connector.class"], "unknown"))

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._config(name))

    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool, initial_state: TargetState | None = None
                             ) -> tuple[bool, ConnectorInfo]:
        self.calls.append(("put", (name, dict(config), allow_replace, initial_state)))
        exists = name in self.configs
        if exists and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        infos = self.validate_connector_config(config)
        if infos["error_count"]:
            raise BadRequestError("invalid", config_infos=infos)
        self.configs[name] = dict(config)
        if not exists:
            self.targets[name] = initial_state or TargetState.STARTED
        return not exists, self.connector_info(name)

    def patch_connector_config(self, name: str,
                               patch: Mapping[str, str | None]) -> ConnectorInfo:
        merged = dict(self._config(name))
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return self.put_connector_config(name, merged, allow_replace=True)[1]

    def delete_connector(self, name: str) -> None:
        self._config(name)
        del self.configs[name], self.targets[name]

    def connector_status(self, name: str) -> ConnectorStateInfo:
        info = self.connector_info(name)
        return ConnectorStateInfo(name, ConnectorState(_STATE_OF_TARGET[self.targets[name]],
                                                       WORKER),
                                  [self.task_status(name, t.task) for t in info.tasks],
                                  info.type)

    def task_status(self, name: str, task: int) -> TaskState:
        if task not in {t.task for t in self.connector_info(name).tasks}:
            raise NotFoundError(f"No status found for task {name}-{task}")
        if task in self.failed_tasks.get(name, set()):
            return TaskState(task, "FAILED", WORKER, "RuntimeError: boom\n  at poll")
        return TaskState(task, _STATE_OF_TARGET[self.targets[name]], WORKER)

    def task_configs(self, name: str) -> list[TaskInfo]:
        return [TaskInfo(t, {"task.class": "T", **self._config(name)})
                for t in self.connector_info(name).tasks]

    def pause_connector(self, name: str) -> None:
        self._config(name)
        self.targets[name] = TargetState.PAUSED

    def resume_connector(self, name: str) -> None:
        self._config(name)
        self.targets[name] = TargetState.STARTED

    def stop_connector(self, name: str) -> None:
        self._config(name)
        self.targets[name] = TargetState.STOPPED

    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        self.calls.append(("restart", (name, include_tasks, only_failed)))
        status = self.connector_status(name)
        if not include_tasks and not only_failed:
            return None
        failed = self.failed_tasks.get(name, set())
        tasks = [TaskState(t.id, "RESTARTING", WORKER)
                 if include_tasks and (not only_failed or t.id in failed) else t
                 for t in status.tasks]
        connector = (status.connector if only_failed
                     else ConnectorState("RESTARTING", WORKER))
        return ConnectorStateInfo(name, connector, tasks, status.type)

    def restart_task(self, name: str, task: int) -> None:
        self.task_status(name, task)
        self.failed_tasks.get(name, set()).discard(task)

    # offsets and topics
    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        self._config(name)
        return list(self.offsets.get(name, []))

    def _require_stopped(self, name: str) -> None:
        self._config(name)
        if self.targets[name] is not TargetState.STOPPED:
            raise BadRequestError(f"Connectors must be in the STOPPED state before their "
                                  f"offsets can be modified. Connector {name} is RUNNING.")

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        self._require_stopped(name)
        self.offsets[name] = [o for o in offsets if o["offset"] is not None]
        return "The offsets for this connector have been altered successfully"

    def reset_connector_offsets(self, name: str) -> str:
        self._require_stopped(name)
        self.offsets.pop(name, None)
        return "The offsets for this connector have been reset successfully"

    def connector_active_topics(self, name: str) -> list[str]:
        self._config(name)
        return list(self.topics.get(name, []))

    def reset_connector_active_topics(self, name: str) -> None:
        self._config(name)
        self.topics.pop(name, None)

    # plugins
    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        configs = []
        errors = 0
        for key in ("connector.class", "tasks.max"):
            value = config.get(key)
            problems = []
            if value is None:
                problems.append(f'Missing required configuration "{key}" which has no '
                                "default value.")
            elif key == "connector.class" and value not in PLUGINS:
                problems.append(f"Class {value} could not be found.")
            elif key == "tasks.max" and not value.isdigit():
                problems.append(f"Invalid value {value} for configuration {key}: Not a "
                                "number of type INT")
            errors += len(problems)
            configs.append({"definition": {"name": key}, "value": {
                "name": key, "value": value, "recommended_values": [], "errors": problems,
                "visible": True}})
        return {"name": config.get("connector.class"), "error_count": errors,
                "groups": ["Common"], "configs": configs}

    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        plugins = [PluginInfo(c, t, "1.0") for c, t in sorted(PLUGINS.items())]
        if not connectors_only:
            plugins.append(PluginInfo("RegexRouter", "transformation"))
        return plugins

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        if plugin not in PLUGINS and not any(c.endswith("." + plugin) for c in PLUGINS):
            raise NotFoundError(f"Unknown plugin {plugin}.")
        return [{"name": "topic", "type": "STRING", "required": True}]
