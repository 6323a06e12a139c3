"""The Herder: the one service interface behind Connect's REST API and CLI.

As in Kafka Connect, the REST API is a thin wrapper over this interface: it parses the
request, calls one method, and serialises the dataclass it gets back (each has
``to_json()`` giving Kafka Connect's JSON shape). Rules live in the herder, so tests can
drive it without HTTP. ``StandaloneHerder`` (one worker) implements it now; the
distributed herder implements the same interface later.

Errors (``connect.runtime.errors``) map to HTTP statuses at the REST edge:
``NotFoundError`` 404, ``AlreadyExistsError`` 409, ``RebalanceInProgressError`` 409,
``BadRequestError`` 400 (with the validation result for an invalid connector config),
anything else 500, always as ``{"error_code": ..., "message": ...}``.

Threading: every method may be called concurrently from REST threads; implementations
serialise state changes. Methods return once the change is recorded; connectors and tasks
start and stop asynchronously (status shows the progress).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "ConnectorInfo",
    "ConnectorState",
    "ConnectorStateInfo",
    "ConnectorTaskId",
    "Herder",
    "PluginInfo",
    "ServerInfo",
    "TargetState",
    "TaskInfo",
    "TaskState",
]


class TargetState(StrEnum):
    """What the user asked a connector to be (Kafka's TargetState)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class ConnectorTaskId:
    connector: str
    task: int

    def to_json(self) -> dict[str, Any]:
        return {"connector": self.connector, "task": self.task}

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"  # Kafka's form, as logs and DLQs show it


@dataclass(frozen=True)
class ConnectorInfo:
    """``GET /connectors/{name}``: the config as the user gave it (placeholders kept)."""

    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: str  # "source", "sink" or "unknown"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "config": dict(self.config),
                "tasks": [t.to_json() for t in self.tasks], "type": self.type}


@dataclass(frozen=True)
class ConnectorState:
    """The connector instance's state: UNASSIGNED, RUNNING, PAUSED, FAILED, RESTARTING,
    STOPPED; ``trace`` holds the failure's stack trace."""

    state: str
    worker_id: str
    trace: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "worker_id": self.worker_id}
        if self.trace:
            out["trace"] = self.trace
        return out


@dataclass(frozen=True)
class TaskState:
    """One task's state, as ``GET /connectors/{name}/tasks/{id}/status`` shows it."""

    id: int
    state: str
    worker_id: str
    trace: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "state": self.state, "worker_id": self.worker_id}
        if self.trace:
            out["trace"] = self.trace
        return out


@dataclass(frozen=True)
class ConnectorStateInfo:
    """``GET /connectors/{name}/status``; tasks sorted by id."""

    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "connector": self.connector.to_json(),
                "tasks": [t.to_json() for t in sorted(self.tasks, key=lambda t: t.id)],
                "type": self.type}


@dataclass(frozen=True)
class TaskInfo:
    """``GET /connectors/{name}/tasks``: a task's id and its (resolved-free) config."""

    id: ConnectorTaskId
    config: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id.to_json(), "config": dict(self.config)}


@dataclass(frozen=True)
class PluginInfo:
    """``GET /connector-plugins``: ``class`` is the name users put in configs."""

    class_name: str
    type: str  # source, sink, transformation, predicate, converter, header_converter
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.class_name, "type": self.type}
        if self.version is not None:
            out["version"] = self.version
        return out


@dataclass(frozen=True)
class ServerInfo:
    """``GET /``."""

    version: str  # the ferryman package's
    commit: str
    kafka_cluster_id: str | None  # the log's cluster id; None when it has none
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "commit": self.commit,
                "kafka_cluster_id": self.kafka_cluster_id, **self.extra}


class Herder(ABC):
    """Manages connectors and tasks of one Connect cluster (one worker, in standalone)."""

    #: This worker's id: its advertised REST ``host:port``, as in Kafka.
    worker_id: str

    # ---------------------------------------------------------------- lifecycle
    @abstractmethod
    def start(self) -> None:
        """Start background work (reading state, starting connectors); returns promptly."""

    @abstractmethod
    def stop(self) -> None:
        """Stop every connector and task (committing offsets), then release resources."""

    @abstractmethod
    def server_info(self) -> ServerInfo: ...

    @abstractmethod
    def health(self) -> tuple[str, str]:
        """``(status, message)``: ``healthy``, ``starting`` or ``unhealthy``."""

    # ---------------------------------------------------------------- connectors
    @abstractmethod
    def connectors(self) -> list[str]:
        """Names of all connectors, sorted."""

    @abstractmethod
    def connector_info(self, name: str) -> ConnectorInfo: ...

    @abstractmethod
    def connector_config(self, name: str) -> dict[str, str]:
        """The raw config: ``${provider:...}`` placeholders are never resolved here."""

    @abstractmethod
    def put_connector_config(self, name: str, config: Mapping[str, str], *,
                             allow_replace: bool,
                             initial_state: TargetState | None = None
                             ) -> tuple[bool, ConnectorInfo]:
        """Create or (with ``allow_replace``) update a connector; returns
        ``(created, info)``. Validates first: an invalid config raises ``BadRequestError``
        naming each bad key; an existing name without ``allow_replace`` raises
        ``AlreadyExistsError``."""

    @abstractmethod
    def patch_connector_config(self, name: str,
                               patch: Mapping[str, str | None]) -> ConnectorInfo:
        """Merge ``patch`` into the config (``None`` deletes a key), validate, apply."""

    @abstractmethod
    def delete_connector(self, name: str) -> None: ...

    @abstractmethod
    def connector_status(self, name: str) -> ConnectorStateInfo: ...

    @abstractmethod
    def task_status(self, name: str, task: int) -> TaskState: ...

    @abstractmethod
    def task_configs(self, name: str) -> list[TaskInfo]: ...

    @abstractmethod
    def pause_connector(self, name: str) -> None: ...

    @abstractmethod
    def resume_connector(self, name: str) -> None: ...

    @abstractmethod
    def stop_connector(self, name: str) -> None:
        """Shut the connector and its tasks down and empty its task configs (KIP-875)."""

    @abstractmethod
    def restart_connector(self, name: str, *, include_tasks: bool = False,
                          only_failed: bool = False) -> ConnectorStateInfo | None:
        """Restart as Kafka's KIP-745 describes: with neither flag only the connector
        instance (returns None: REST answers 204); otherwise the status with the restarted
        instances shown RESTARTING (REST answers 202)."""

    @abstractmethod
    def restart_task(self, name: str, task: int) -> None: ...

    # ---------------------------------------------------------------- offsets and topics
    @abstractmethod
    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        """``[{"partition": {...}, "offset": {...}}]``; sink partitions use Kafka's
        ``kafka_topic``/``kafka_partition`` and ``kafka_offset`` keys."""

    @abstractmethod
    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        """Alter offsets of a STOPPED connector (``BadRequestError`` otherwise); returns
        Kafka's success message."""

    @abstractmethod
    def reset_connector_offsets(self, name: str) -> str: ...

    @abstractmethod
    def connector_active_topics(self, name: str) -> list[str]: ...

    @abstractmethod
    def reset_connector_active_topics(self, name: str) -> None: ...

    # ---------------------------------------------------------------- plugins
    @abstractmethod
    def validate_connector_config(self, config: Mapping[str, str]) -> dict[str, Any]:
        """Kafka's ``ConfigInfos`` JSON (name, error_count, groups, configs), covering the
        connector's own keys, the framework's (converters, transforms, predicates, error
        handling, topic creation) and undefined keys with ``"definition": null``."""

    @abstractmethod
    def connector_plugins(self, connectors_only: bool = True) -> list[PluginInfo]: ...

    @abstractmethod
    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        """The plugin's ``ConfigKeyInfo`` list; ``NotFoundError`` for an unknown plugin."""
