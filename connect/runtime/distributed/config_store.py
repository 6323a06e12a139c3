"""``ConfigBackingStore``: connector configs, task configs, target states, restart requests
and the session key in the config topic, in Kafka Connect's exact format.

The topic (``config.storage.topic``, default ``connect-configs``) has one partition, so it
is an ordered write-ahead log, and is compacted. Keys are plain strings and values JSON
written compactly, as Kafka's JsonConverter with ``schemas.enable=false`` writes them, so
a Ferry cluster and a Kafka Connect cluster can read each other's topic:

====================================  =====================================================
``connector-<name>``                  ``{"properties":{...}}``; a tombstone deletes it
``task-<name>-<n>``                   ``{"properties":{...}}``, held back until the commit
``commit-<name>``                     ``{"tasks":N}``: applies the held-back task configs
``target-state-<name>``               ``{"state":"PAUSED","state.v2":"STOPPED"}``
``restart-connector-<name>``          ``{"include-tasks":bool,"only-failed":bool}``
``session-key``                       ``{"key":b64,"algorithm":..,"creation-timestamp":ms}``
``tasks-fencing-<name>``              ``{"task-count":N}`` (exactly-once sources; ignored)
``logger-cluster-<namespace>``        ``{"level":"DEBUG"}`` (passed to the listener)
====================================  =====================================================

As in Kafka, task configs are applied only when a commit record says how many there are
and all of them (ids ``0..N-1``) were read since the previous commit; otherwise (configs
lost to compaction, a leader that died mid-write) the connector is *inconsistent*: its
old task configs stay, ``tasks()`` of the snapshot is empty for it, and the herder must
ask the connector for new task configs. Deleting a connector writes tombstones for its
config and target state; in memory its task configs go too. Task configs still in the
topic for a deleted connector are ignored when their commit is read.

Threads: writes may come from any thread and return once the records are durable and (for
all but ``put_target_state``, as in Kafka) read back by this store. Listener callbacks run
on the reader thread, only after ``start()`` has read the topic once (the herder takes a
``snapshot()`` after starting); they must not block for long.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connect.api.errors import ConnectError
from connect.runtime.distributed.topic_reader import TopicReader
from connect.runtime.herder import ConnectorTaskId, TargetState
from core.backends import ConsumerRecord, LogBackend
from core.backends import errors as be

__all__ = [
    "CONFIG_TOPIC_DEFAULT",
    "ClusterConfigState",
    "ConfigBackingStore",
    "ConfigUpdateListener",
    "RestartRequest",
    "SessionKey",
    "commit_key",
    "connector_key",
    "restart_key",
    "target_state_key",
    "task_key",
]

log = logging.getLogger(__name__)

CONFIG_TOPIC_DEFAULT = "connect-configs"
#: Kafka's READ_WRITE_TOTAL_TIMEOUT_MS: how long a write may take, read-back included.
WRITE_TIMEOUT_S = 30.0

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_TASKS_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
TASK_COUNT_RECORD_PREFIX = "tasks-fencing-"
SESSION_KEY_KEY = "session-key"
LOGGER_CLUSTER_PREFIX = "logger-cluster-"


def connector_key(name: str) -> str:
    return CONNECTOR_PREFIX + name


def task_key(task: ConnectorTaskId) -> str:
    return f"{TASK_PREFIX}{task.connector}-{task.task}"


def commit_key(name: str) -> str:
    return COMMIT_TASKS_PREFIX + name


def target_state_key(name: str) -> str:
    return TARGET_STATE_PREFIX + name


def restart_key(name: str) -> str:
    return RESTART_PREFIX + name


def _dumps(value: Any) -> bytes:
    """JSON as Kafka's JsonConverter writes it: compact, UTF-8, not ASCII-escaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _java_string(value: Any) -> str:
    """A non-string JSON scalar as text (``true``, ``3``), for configs written by other
    tools: Kafka keeps such values as they are and fails later when it reads them as
    strings; Ferry turns them into the string a user would have written."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class SessionKey:
    """The key workers sign internal REST requests with (KIP-507); the leader rotates it."""

    key: bytes
    algorithm: str
    creation_timestamp: int

    def __repr__(self) -> str:  # never log the key itself
        return (f"SessionKey(algorithm={self.algorithm!r}, "
                f"creation_timestamp={self.creation_timestamp})")


@dataclass(frozen=True)
class RestartRequest:
    """A KIP-745 restart request, read from the config topic and handled by the leader."""

    connector: str
    only_failed: bool = False
    include_tasks: bool = False


@dataclass(frozen=True)
class ClusterConfigState:
    """A consistent snapshot of the config topic as this worker has read it.

    ``offset`` is the config topic position after the last record read (Kafka's
    ``ClusterConfigState.offset``: the next offset, -1 before any record); workers compare
    it during rebalances. The mappings are copies owned by the snapshot: do not mutate them.
    """

    offset: int = -1
    session_key: SessionKey | None = None
    connector_task_counts: dict[str, int] = field(default_factory=dict)
    connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    task_configs: dict[ConnectorTaskId, dict[str, str]] = field(default_factory=dict)
    inconsistent_connectors: frozenset[str] = frozenset()
    #: Per connector, how many times a commit applied task configs (starts at 0).
    task_config_generations: dict[str, int] = field(default_factory=dict)
    #: Per connector, its config when task configs were last applied: a herder compares
    #: it with the current config to decide whether task configs must be regenerated.
    applied_connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    def connectors(self) -> list[str]:
        """Names of all connectors, sorted."""
        return sorted(self.connector_configs)

    def contains(self, connector: str) -> bool:
        return connector in self.connector_configs

    def connector_config(self, connector: str) -> dict[str, str] | None:
        return self.connector_configs.get(connector)

    def target_state(self, connector: str) -> TargetState | None:
        return self.target_states.get(connector)

    def task_count(self, connector: str) -> int:
        return self.connector_task_counts.get(connector, 0)

    def tasks(self, connector: str) -> list[ConnectorTaskId]:
        """The connector's task ids ``0..N-1``; empty while it is inconsistent."""
        if connector in self.inconsistent_connectors:
            return []
        return [ConnectorTaskId(connector, i) for i in range(self.task_count(connector))]

    def all_tasks(self) -> list[ConnectorTaskId]:
        return [t for c in self.connectors() for t in self.tasks(c)]

    def task_config(self, task: ConnectorTaskId) -> dict[str, str] | None:
        return self.task_configs.get(task)

    def task_config_list(self, connector: str) -> list[dict[str, str]]:
        """The connector's task configs in task id order (empty while inconsistent)."""
        return [self.task_configs[t] for t in self.tasks(connector) if t in self.task_configs]


class ConfigUpdateListener:
    """Callbacks of Kafka's ``ConfigBackingStore.UpdateListener``; override what you need.

    Called on the store's reader thread after the change is in ``snapshot()``.
    """

    def on_connector_config_update(self, connector: str) -> None:
        """A connector was created or its config changed."""

    def on_connector_config_remove(self, connector: str) -> None:
        """A connector was deleted."""

    def on_task_config_update(self, tasks: list[ConnectorTaskId]) -> None:
        """A commit record was read; ``tasks`` lists the task configs it applied (empty
        when the commit found the connector inconsistent)."""

    def on_connector_target_state_change(self, connector: str) -> None:
        """An existing connector's target state changed."""

    def on_session_key_update(self, key: SessionKey) -> None:
        """The leader distributed a new session key."""

    def on_restart_request(self, request: RestartRequest) -> None:
        """A restart was requested (the leader acts on it)."""

    def on_logging_level_update(self, namespace: str, level: str) -> None:
        """A cluster-wide log level was set (KIP-976)."""


class ConfigBackingStore:
    """The config topic, read into memory by a ``TopicReader``; see the module docstring.

    Lifecycle: construct → ``set_update_listener`` → ``start()`` (creates/checks the topic,
    reads it once) → ``snapshot()``, writes → ``stop()``.
    """

    def __init__(self, backend: LogBackend, *, topic: str = CONFIG_TOPIC_DEFAULT,
                 replication_factor: int | None = None,
                 topic_settings: Mapping[str, str] | None = None,
                 listener: ConfigUpdateListener | None = None,
                 write_timeout_s: float = WRITE_TIMEOUT_S) -> None:
        self.topic = topic
        self._listener = listener or ConfigUpdateListener()
        self._write_timeout = write_timeout_s
        self._lock = threading.Lock()
        self._started = False
        self._offset = -1
        self._session_key: SessionKey | None = None
        self._task_counts: dict[str, int] = {}
        self._connector_configs: dict[str, dict[str, str]] = {}
        self._task_configs: dict[ConnectorTaskId, dict[str, str]] = {}
        self._deferred: dict[str, dict[ConnectorTaskId, dict[str, str]]] = {}
        self._target_states: dict[str, TargetState] = {}
        self._inconsistent: set[str] = set()
        self._generations: dict[str, int] = {}
        self._applied: dict[str, dict[str, str]] = {}
        self.reader = TopicReader(
            backend, topic, self._on_record, partitions=1,
            replication_factor=replication_factor, topic_settings=topic_settings,
            require_single_partition=True, topic_config_name="config.storage.topic",
            purpose="connector configurations")

    # ------------------------------------------------------------------ lifecycle

    def set_update_listener(self, listener: ConfigUpdateListener) -> None:
        self._listener = listener

    def start(self, timeout: float = WRITE_TIMEOUT_S) -> None:
        """Create or check the topic and read it to its end; callbacks start after that.
        Raises ``ConfigError`` (a topic with more than one partition or not compacted),
        ``ConnectError`` when the log cannot be read in time."""
        log.info("starting the config store on topic %s", self.topic)
        self.reader.start(timeout, on_caught_up=self._mark_started)
        log.info("read the config topic %s to offset %d: %d connectors", self.topic,
                 self._offset, len(self._connector_configs))

    def _mark_started(self) -> None:
        self._started = True

    def stop(self, timeout: float = 5.0) -> None:
        self.reader.stop(timeout)

    # ------------------------------------------------------------------ reads

    def snapshot(self) -> ClusterConfigState:
        """The current state; later records do not change it."""
        with self._lock:
            return ClusterConfigState(
                offset=self._offset,
                session_key=self._session_key,
                connector_task_counts=dict(self._task_counts),
                connector_configs={k: dict(v) for k, v in self._connector_configs.items()},
                target_states=dict(self._target_states),
                task_configs={k: dict(v) for k, v in self._task_configs.items()},
                inconsistent_connectors=frozenset(self._inconsistent),
                task_config_generations=dict(self._generations),
                applied_connector_configs={k: dict(v) for k, v in self._applied.items()})

    def contains(self, connector: str) -> bool:
        with self._lock:
            return connector in self._connector_configs

    @property
    def offset(self) -> int:
        """The config topic position after the last record read (-1 before any)."""
        return self._offset

    def refresh(self, timeout: float) -> None:
        """Read the topic to its current end. Raises ``ReadToEndTimeoutError``."""
        self.reader.read_to_end(timeout)

    # ------------------------------------------------------------------ writes

    def put_connector_config(self, name: str, config: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        """Write a connector's config (and first its target state, when given: a new
        connector without one starts STARTED) and wait until it is read back."""
        records: list[tuple[str, bytes | None]] = []
        if target_state is not None:
            records.append((target_state_key(name), self._target_state_value(target_state)))
        records.append((connector_key(name), _dumps({"properties": dict(config)})))
        self._write(records, f"the configuration of connector {name}", read_back=True)

    def remove_connector_config(self, name: str) -> None:
        """Delete a connector: tombstones for its config and its target state (as Kafka
        writes them), waiting until they are read back."""
        self._write([(connector_key(name), None), (target_state_key(name), None)],
                    f"the removal of connector {name}", read_back=True)

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, str]]) -> None:
        """Write task configs ``task-<name>-0..N-1`` then the ``commit-<name>`` record that
        applies them, as Kafka does: read to the end first, read back the task configs
        before writing the commit, and read back the commit."""
        what = f"the task configurations of connector {name}"
        deadline = time.monotonic() + self._write_timeout
        self._read_back(deadline, what)
        records: list[tuple[str, bytes | None]] = [
            (task_key(ConnectorTaskId(name, i)), _dumps({"properties": dict(config)}))
            for i, config in enumerate(configs)]
        if records:
            self._send(records, what)
            self._read_back(deadline, what)
        self._send([(commit_key(name), _dumps({"tasks": len(records)}))], what)
        self._read_back(deadline, what)

    def put_target_state(self, name: str, state: TargetState) -> None:
        """Write a connector's target state; returns once it is durable (not read back,
        as in Kafka: any worker may call this, and ``refresh`` reads it back)."""
        self._write([(target_state_key(name), self._target_state_value(state))],
                    f"the target state of connector {name}", read_back=False)

    def put_restart_request(self, name: str, include_tasks: bool = False,
                            only_failed: bool = False) -> None:
        """Write a KIP-745 restart request and wait until it is read back."""
        value = _dumps({"include-tasks": bool(include_tasks), "only-failed": bool(only_failed)})
        self._write([(restart_key(name), value)], f"a restart request for connector {name}",
                    read_back=True)

    def put_session_key(self, key: SessionKey) -> None:
        """Distribute a session key (the leader does this) and wait until it is read back."""
        value = _dumps({"key": base64.b64encode(key.key).decode("ascii"),
                        "algorithm": key.algorithm,
                        "creation-timestamp": int(key.creation_timestamp)})
        self._write([(SESSION_KEY_KEY, value)], "the session key", read_back=True)

    @staticmethod
    def _target_state_value(state: TargetState) -> bytes:
        state = TargetState(state)
        # Workers older than KIP-875 know no STOPPED; they read ``state`` and see PAUSED.
        legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
        return _dumps({"state": legacy.value, "state.v2": state.value})

    def _write(self, records: list[tuple[str, bytes | None]], what: str, *,
               read_back: bool) -> None:
        deadline = time.monotonic() + self._write_timeout
        self._send(records, what)
        if read_back:
            self._read_back(deadline, what)

    def _send(self, records: list[tuple[str, bytes | None]], what: str) -> None:
        log.debug("writing %s (%s)", what, ", ".join(k for k, _ in records))
        try:
            self.reader.send_all(records)
        except be.BackendError as exc:
            raise ConnectError(f"Error writing {what} to the config topic {self.topic}: "
                               f"{exc}") from exc

    def _read_back(self, deadline: float, what: str) -> None:
        remaining = deadline - time.monotonic()
        try:
            self.reader.read_to_end(max(0.0, remaining))
        except ConnectError as exc:
            raise ConnectError(f"Error writing {what} to the config topic {self.topic}: "
                               f"{exc}") from exc

    # ------------------------------------------------------------------ the reader thread

    def _on_record(self, record: ConsumerRecord) -> None:
        try:
            key = (record.key or b"").decode()
        except UnicodeDecodeError:
            log.error("Discarding config record at offset %d with a key that is not UTF-8",
                      record.offset)
            return
        raw = record.value
        try:
            value = None if raw is None else json.loads(raw)
        except ValueError as exc:
            log.error("Failed to convert config record %r at offset %d from JSON: %s", key,
                      record.offset, exc)
            return
        self._offset = record.offset + 1
        if key.startswith(TARGET_STATE_PREFIX):
            self._process_target_state(key[len(TARGET_STATE_PREFIX):], value)
        elif key.startswith(CONNECTOR_PREFIX):
            self._process_connector_config(key[len(CONNECTOR_PREFIX):], value)
        elif key.startswith(TASK_PREFIX):
            task = _parse_task_id(key)
            if task is None:
                log.error("Ignoring task configuration because %s couldn't be parsed as a "
                          "task config key", key)
                return
            self._process_task_config(task, value)
        elif key.startswith(COMMIT_TASKS_PREFIX):
            self._process_commit(key[len(COMMIT_TASKS_PREFIX):], value)
        elif key.startswith(RESTART_PREFIX):
            request = _restart_request(key[len(RESTART_PREFIX):], value)
            if request is not None and self._started:
                self._listener.on_restart_request(request)
        elif key.startswith(TASK_COUNT_RECORD_PREFIX):
            # Exactly-once source support is not implemented; tolerate Kafka's records.
            log.debug("ignoring task count record %s", key)
        elif key == SESSION_KEY_KEY:
            self._process_session_key(value)
        elif key.startswith(LOGGER_CLUSTER_PREFIX):
            self._process_logger_level(key[len(LOGGER_CLUSTER_PREFIX):], value)
        else:
            log.error("Discarding config update record with invalid key: %s", key)

    def _process_target_state(self, name: str, value: Any) -> None:
        removed = False
        changed = True
        with self._lock:
            if value is None:
                self._target_states.pop(name, None)
                removed = True
                # A connector that still has a config always has a target state.
                if name in self._connector_configs:
                    self._target_states[name] = TargetState.STARTED
            else:
                if not isinstance(value, dict):
                    log.error("Ignoring target state for connector '%s' because it is in the "
                              "wrong format: %s", name, type(value).__name__)
                    return
                raw = value.get("state.v2")
                if raw is not None and not isinstance(raw, str):
                    log.error("Invalid data for target state for connector '%s': 'state.v2' "
                              "field should be a string", name)
                    raw = None
                if raw is None:
                    raw = value.get("state")  # written by a worker older than KIP-875
                    if not isinstance(raw, str):
                        log.error("Invalid data for target state for connector '%s': 'state' "
                                  "field should be a string", name)
                        return
                try:
                    state = TargetState(raw)
                except ValueError:
                    log.error("Invalid target state for connector '%s': %s", name, raw)
                    return
                previous = self._target_states.get(name)
                self._target_states[name] = state
                changed = state != previous
            exists = name in self._connector_configs
        # A removal is reported through the connector config's removal; a state written
        # before its connector (an initial state) is not reported either.
        if self._started and not removed and changed and exists:
            self._listener.on_connector_target_state_change(name)

    def _process_connector_config(self, name: str, value: Any) -> None:
        with self._lock:
            if value is None:
                self._remove_connector(name)
                log.info("processed the removal of connector '%s'", name)
                removed = True
            else:
                props = value.get("properties") if isinstance(value, dict) else None
                if not isinstance(props, dict):
                    log.error("Ignoring configuration for connector '%s' because it is in the "
                              "wrong format", name)
                    return
                self._connector_configs[name] = _properties(props, f"connector '{name}'")
                self._target_states.setdefault(name, TargetState.STARTED)
                removed = False
        if self._started:
            if removed:
                self._listener.on_connector_config_remove(name)
            else:
                self._listener.on_connector_config_update(name)

    def _process_task_config(self, task: ConnectorTaskId, value: Any) -> None:
        with self._lock:
            if value is None:
                log.error("Ignoring task configuration for task %s because it is unexpectedly "
                          "null", task)
                return
            props = value.get("properties") if isinstance(value, dict) else None
            if not isinstance(props, dict):
                log.error("Ignoring task configuration for task %s because it is in the "
                          "wrong format", task)
                return
            self._deferred.setdefault(task.connector, {})[task] = _properties(
                props, f"task {task}")

    def _process_commit(self, name: str, value: Any) -> None:
        updated: list[ConnectorTaskId] = []
        with self._lock:
            connector_config = self._connector_configs.get(name)
            if connector_config is None:
                # The connector was deleted and compaction removed its config and tombstone:
                # these task configs belong to nothing.
                self._remove_connector(name)
                log.debug("Ignoring task configs for connector %s; the connector was deleted",
                          name)
                return
            count = value.get("tasks") if isinstance(value, dict) else None
            if not isinstance(count, int) or isinstance(count, bool):
                log.error("Ignoring connector tasks configuration commit for connector '%s' "
                          "because it is in the wrong format", name)
                return
            deferred = self._deferred.get(name, {})
            ids = {t.task for t in deferred}
            if not all(i in ids for i in range(count)):
                # Only compacted history or an interrupted write can cause this.
                log.debug("incomplete set of task configs for connector '%s' (commit of %d "
                          "tasks, found %s); marking it inconsistent", name, count, sorted(ids))
                self._inconsistent.add(name)
            else:
                if deferred:
                    self._task_configs.update(deferred)
                    updated.extend(sorted(deferred, key=lambda t: t.task))
                    self._generations[name] = self._generations.get(name, -1) + 1
                self._inconsistent.discard(name)
                self._applied[name] = dict(connector_config)
            # Always drop the held-back configs: after an inconsistent commit only a fresh
            # complete set may be applied.
            deferred.clear()
            self._task_counts[name] = count
        if self._started:
            self._listener.on_task_config_update(updated)

    def _process_session_key(self, value: Any) -> None:
        if not isinstance(value, dict):
            log.error("Ignoring session key because it is null or in the wrong format")
            return
        encoded, algorithm = value.get("key"), value.get("algorithm")
        created = value.get("creation-timestamp")
        if not isinstance(encoded, str) or not isinstance(algorithm, str):
            log.error("Ignoring session key: 'key' and 'algorithm' should be strings")
            return
        if not isinstance(created, int) or isinstance(created, bool):
            log.error("Ignoring session key: 'creation-timestamp' should be a long")
            return
        try:
            raw = base64.b64decode(encoded, validate=True)
        except ValueError:
            log.error("Ignoring session key: 'key' is not base64")
            return
        key = SessionKey(raw, algorithm, created)
        with self._lock:
            self._session_key = key
        if self._started:
            self._listener.on_session_key_update(key)

    def _process_logger_level(self, namespace: str, value: Any) -> None:
        level = value.get("level") if isinstance(value, dict) else None
        if not isinstance(level, str):
            log.error("Ignoring logging level for namespace %s: 'level' should be a string",
                      namespace)
            return
        if self._started:
            self._listener.on_logging_level_update(namespace, level)

    def _remove_connector(self, name: str) -> None:
        self._connector_configs.pop(name, None)
        self._task_counts.pop(name, None)
        for task in [t for t in self._task_configs if t.connector == name]:
            del self._task_configs[task]
        self._deferred.pop(name, None)
        self._applied.pop(name, None)


def _parse_task_id(key: str) -> ConnectorTaskId | None:
    """``task-<connector>-<n>``; the connector name may contain dashes."""
    parts = key.split("-")
    if len(parts) < 3:
        return None
    try:
        number = int(parts[-1])
    except ValueError:
        return None
    return ConnectorTaskId("-".join(parts[1:-1]), number)


def _properties(props: dict[str, Any], what: str) -> dict[str, str]:
    """Config properties as strings: null entries are dropped and other non-string values
    turned into their JSON text (see ``_java_string``)."""
    out: dict[str, str] = {}
    for k, v in props.items():
        if v is None:
            log.debug("dropping null property %s of %s", k, what)
            continue
        out[str(k)] = _java_string(v)
    return out


def _restart_request(name: str, value: Any) -> RestartRequest | None:
    if not isinstance(value, dict):
        log.error("Ignoring restart request for connector %s because it is not a JSON object",
                  name)
        return None
    flags = {}
    for field_name in ("only-failed", "include-tasks"):
        flag = value.get(field_name)
        if not isinstance(flag, bool):
            log.warning("Invalid data for restart request '%s' field should be a boolean but "
                        "is %r; defaulting to false", field_name, flag)
            flag = False
        flags[field_name] = flag
    return RestartRequest(name, only_failed=flags["only-failed"],
                          include_tasks=flags["include-tasks"])
