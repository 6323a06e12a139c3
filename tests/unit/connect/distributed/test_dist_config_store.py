"""ConfigBackingStore on a real log: the embedded backend and kafka:// on a Ferry broker.

Records are checked byte for byte against Kafka Connect's format, and topics written with
Kafka Connect's exact JSON (produced raw here) must rebuild the same cluster state.
"""

from __future__ import annotations

import base64
import threading

import pytest
from dist_store_fixtures import WAIT_S, LogHarness, log_fixtures, partition_records, produce_raw

from connect.api.errors import ConfigError, ConnectError
from connect.runtime.distributed.config_store import (
    ClusterConfigState,
    ConfigBackingStore,
    ConfigUpdateListener,
    RestartRequest,
    SessionKey,
)
from connect.runtime.herder import ConnectorTaskId, TargetState
from core.backends import LogBackend, TopicPartition

# ---------------------------------------------------------------------- harness


class ConfigLog(LogHarness):
    """Config stores on one log."""

    TOPIC_PREFIX = "connect-configs"

    def store(self, listener: ConfigUpdateListener | None = None, *,
              start: bool = True) -> ConfigBackingStore:
        store = ConfigBackingStore(self.backend(), topic=self.topic, listener=listener,
                                   write_timeout_s=WAIT_S)
        self.on_close(store.stop)
        if start:
            store.start(WAIT_S)
        return store


kafka_broker, log = log_fixtures(ConfigLog, "dist-config")


def raw_records(backend: LogBackend, topic: str) -> list[tuple[str, bytes | None]]:
    """Every record of partition 0 as (key, value), in offset order."""
    return partition_records(backend, TopicPartition(topic, 0))


class Recorder(ConfigUpdateListener):
    """Records every callback, with the thread it came on."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.threads: set[str] = set()
        self._cond = threading.Condition()

    def _add(self, kind: str, arg: object) -> None:
        with self._cond:
            self.events.append((kind, arg))
            self.threads.add(threading.current_thread().name)
            self._cond.notify_all()

    def wait_for(self, event: tuple[str, object]) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: event in self.events, WAIT_S):
                raise AssertionError(f"no {event} within {WAIT_S} s; got {self.events}")

    def on_connector_config_update(self, connector: str) -> None:
        self._add("update", connector)

    def on_connector_config_remove(self, connector: str) -> None:
        self._add("remove", connector)

    def on_task_config_update(self, tasks: list[ConnectorTaskId]) -> None:
        self._add("tasks", tuple(tasks))

    def on_connector_target_state_change(self, connector: str) -> None:
        self._add("target", connector)

    def on_session_key_update(self, key: SessionKey) -> None:
        self._add("session", key)

    def on_restart_request(self, request: RestartRequest) -> None:
        self._add("restart", request)

    def on_logging_level_update(self, namespace: str, level: str) -> None:
        self._add("logger", (namespace, level))


CONFIG = {"connector.class": "FileStreamSource", "tasks.max": "2", "name": "c1",
          "file": "/tmp/in.txt", "topic": "t\u00e9"}
TASK0 = {"task.class": "FileStreamSourceTask", "file": "/tmp/in.txt", "topic": "t\u00e9"}
TASK1 = {"task.class": "FileStreamSourceTask", "file": "/tmp/other.txt", "topic": "t"}


# ---------------------------------------------------------------------- tests

def test_writes_use_kafka_connects_exact_keys_and_json(log: ConfigLog) -> None:
    store = log.store()
    store.put_connector_config("c1", CONFIG, TargetState.PAUSED)
    store.put_task_configs("c1", [TASK0, TASK1])
    store.put_target_state("c1", TargetState.STOPPED)
    store.put_restart_request("c1", include_tasks=True, only_failed=False)
    store.put_session_key(SessionKey(b"\x01\x02secret", "HmacSHA256", 1700000000123))
    store.remove_connector_config("c1")

    records = raw_records(log.backend(), log.topic)
    assert records == [
        ("target-state-c1", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        ("connector-c1", '{"properties":{"connector.class":"FileStreamSource","tasks.max":"2",'
                         '"name":"c1","file":"/tmp/in.txt","topic":"t\u00e9"}}'.encode()),
        ("task-c1-0", '{"properties":{"task.class":"FileStreamSourceTask",'
                      '"file":"/tmp/in.txt","topic":"t\u00e9"}}'.encode()),
        ("task-c1-1", b'{"properties":{"task.class":"FileStreamSourceTask",'
                      b'"file":"/tmp/other.txt","topic":"t"}}'),
        ("commit-c1", b'{"tasks":2}'),
        ("target-state-c1", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        ("restart-connector-c1", b'{"include-tasks":true,"only-failed":false}'),
        ("session-key", b'{"key":"' + base64.b64encode(b"\x01\x02secret")
         + b'","algorithm":"HmacSHA256","creation-timestamp":1700000000123}'),
        ("connector-c1", None),
        ("target-state-c1", None),
    ]


def test_round_trip_snapshot(log: ConfigLog) -> None:
    store = log.store()
    assert store.snapshot() == ClusterConfigState()
    store.put_connector_config("c1", CONFIG)
    store.put_connector_config("c-2", {"connector.class": "X"}, TargetState.STOPPED)
    store.put_task_configs("c1", [TASK0, TASK1])
    store.put_task_configs("c-2", [])
    store.put_target_state("c1", TargetState.PAUSED)
    key = SessionKey(b"k" * 32, "HmacSHA256", 42)
    store.put_session_key(key)
    store.refresh(WAIT_S)

    snap = store.snapshot()
    assert snap.connectors() == ["c-2", "c1"]
    assert snap.connector_config("c1") == CONFIG
    assert snap.target_state("c1") == TargetState.PAUSED
    assert snap.target_state("c-2") == TargetState.STOPPED
    assert snap.tasks("c1") == [ConnectorTaskId("c1", 0), ConnectorTaskId("c1", 1)]
    assert snap.task_config_list("c1") == [TASK0, TASK1]
    assert snap.task_count("c-2") == 0 and snap.tasks("c-2") == []
    assert snap.session_key == key
    assert snap.inconsistent_connectors == frozenset()
    assert snap.applied_connector_configs["c1"] == CONFIG
    assert snap.offset == 9  # one past the last of 9 records (Kafka's position)
    assert store.reader.caught_up and store.reader.connected

    # Task configs replaced with fewer tasks: the old task 1 config is kept but unused.
    store.put_task_configs("c1", [TASK1])
    snap = store.snapshot()
    assert snap.tasks("c1") == [ConnectorTaskId("c1", 0)]
    assert snap.task_config_list("c1") == [TASK1]
    assert snap.task_config_generations["c1"] == 1


def test_created_topic_is_compacted_with_one_partition(log: ConfigLog) -> None:
    log.store()
    description = log.backend().describe_topic(log.topic)
    assert len(description.partitions) == 1
    assert description.configs["cleanup.policy"] == "compact"


def test_refuses_config_topic_with_more_partitions(log: ConfigLog) -> None:
    log.backend().create_topic(log.topic, 3, {"cleanup.policy": "compact"})
    store = log.store(start=False)
    with pytest.raises(ConfigError, match=r"single partition.*found 3 partitions"):
        store.start(WAIT_S)
    assert not store.reader.running


def test_refuses_config_topic_that_is_not_compacted(log: ConfigLog) -> None:
    log.backend().create_topic(log.topic, 1, {"cleanup.policy": "delete"})
    with pytest.raises(ConfigError, match=r"cleanup\.policy=compact"):
        log.store()


def test_two_stores_see_each_others_writes(log: ConfigLog) -> None:
    a_events, b_events = Recorder(), Recorder()
    a = log.store(a_events)
    b = log.store(b_events)

    a.put_connector_config("c1", CONFIG)
    b.refresh(WAIT_S)  # the read-your-writes barrier
    assert b.snapshot().connector_config("c1") == CONFIG
    b_events.wait_for(("update", "c1"))

    b.put_task_configs("c1", [TASK0, TASK1])
    a.refresh(WAIT_S)
    assert a.snapshot().task_config_list("c1") == [TASK0, TASK1]
    a_events.wait_for(("tasks", (ConnectorTaskId("c1", 0), ConnectorTaskId("c1", 1))))

    a.put_target_state("c1", TargetState.PAUSED)
    b.refresh(WAIT_S)
    assert b.snapshot().target_state("c1") == TargetState.PAUSED
    b_events.wait_for(("target", "c1"))

    b.put_restart_request("c1", include_tasks=True, only_failed=True)
    a_events.wait_for(("restart", RestartRequest("c1", only_failed=True, include_tasks=True)))
    key = SessionKey(b"0123456789abcdef", "HmacSHA256", 1234)
    a.put_session_key(key)
    b_events.wait_for(("session", key))

    a.remove_connector_config("c1")
    b.refresh(WAIT_S)
    assert not b.snapshot().contains("c1")
    assert b.snapshot().task_configs == {}
    b_events.wait_for(("remove", "c1"))
    assert a.snapshot() == b.snapshot()
    # Callbacks come from each store's reader thread, never from the writing thread.
    assert all(name.startswith("topic-reader-") for name in a_events.threads | b_events.threads)


def test_callbacks_start_after_the_initial_read(log: ConfigLog) -> None:
    writer = log.store()
    writer.put_connector_config("old", {"connector.class": "X"})
    writer.put_restart_request("old", include_tasks=False, only_failed=False)
    events = Recorder()
    reader = log.store(events)
    assert reader.snapshot().contains("old")
    writer.put_connector_config("new", {"connector.class": "Y"})
    events.wait_for(("update", "new"))
    assert ("update", "old") not in events.events
    assert not [e for e in events.events if e[0] == "restart"]


def test_topic_written_by_kafka_connect_rebuilds_the_snapshot(log: ConfigLog) -> None:
    backend = log.backend()
    backend.create_topic(log.topic, 1, {"cleanup.policy": "compact"})
    key = base64.b64encode(b"sixteen byte key").decode()
    produce_raw(backend, log.topic, [
        ("connector-src-a", '{"properties":{"connector.class":"FileStreamSource",'
                            '"tasks.max":"1","name":"src-a","file":"x"}}'),
        ("target-state-src-a", '{"state":"PAUSED"}'),  # written by a pre-KIP-875 worker
        ("task-src-a-0", '{"properties":{"task.class":"T","file":"x"}}'),
        ("commit-src-a", '{"tasks":1}'),
        ("tasks-fencing-src-a", '{"task-count":1}'),
        ("connector-sink", '{"properties":{"connector.class":"FileStreamSink",'
                           '"tasks.max":3,"enabled":true,"gone":null}}'),
        ("target-state-sink", '{"state":"PAUSED","state.v2":"STOPPED"}'),
        ("commit-sink", '{"tasks":0}'),
        ("session-key", '{"key":"' + key + '","algorithm":"HmacSHA256",'
                        '"creation-timestamp":1717000000000}'),
        ("logger-cluster-org.apache.kafka.connect", '{"level":"DEBUG"}'),
        ("restart-connector-src-a", '{"include-tasks":true,"only-failed":false}'),
        ("something-else", '{"a":1}'),
        ("connector-broken", "{not json"),
        ("task-x", '{"properties":{}}'),
    ])
    snap = log.store().snapshot()
    assert snap.connectors() == ["sink", "src-a"]
    assert snap.connector_config("src-a") == {"connector.class": "FileStreamSource",
                                              "tasks.max": "1", "name": "src-a", "file": "x"}
    assert snap.target_state("src-a") == TargetState.PAUSED
    assert snap.task_config_list("src-a") == [{"task.class": "T", "file": "x"}]
    # Non-string values become strings, nulls are dropped.
    assert snap.connector_config("sink") == {"connector.class": "FileStreamSink",
                                             "tasks.max": "3", "enabled": "true"}
    assert snap.target_state("sink") == TargetState.STOPPED
    assert snap.task_count("sink") == 0
    assert snap.session_key == SessionKey(b"sixteen byte key", "HmacSHA256", 1717000000000)
    assert snap.inconsistent_connectors == frozenset()
    assert snap.offset == 14  # one past the last record


def test_task_configs_without_commit_are_not_applied(log: ConfigLog) -> None:
    backend = log.backend()
    backend.create_topic(log.topic, 1, {"cleanup.policy": "compact"})
    produce_raw(backend, log.topic, [
        ("connector-c", '{"properties":{"connector.class":"X"}}'),
        ("task-c-0", '{"properties":{"v":"old0"}}'),
        ("task-c-1", '{"properties":{"v":"old1"}}'),
        ("commit-c", '{"tasks":2}'),
        # A leader died after one of two new task configs: nothing is applied.
        ("task-c-0", '{"properties":{"v":"new0"}}'),
    ])
    store = log.store()
    snap = store.snapshot()
    assert snap.task_config_list("c") == [{"v": "old0"}, {"v": "old1"}]
    assert snap.inconsistent_connectors == frozenset()

    # Compaction removed task-c-1 of the newer set; its commit cannot apply: inconsistent.
    produce_raw(backend, log.topic, [("commit-c", '{"tasks":2}')])
    store.refresh(WAIT_S)
    snap = store.snapshot()
    assert snap.inconsistent_connectors == frozenset({"c"})
    assert snap.tasks("c") == []
    assert snap.task_count("c") == 2
    assert snap.task_config(ConnectorTaskId("c", 0)) == {"v": "old0"}

    # A restarted store reaches the same conclusion from the log alone.
    assert log.store().snapshot() == snap

    # The herder regenerates task configs: the connector is consistent again.
    store.put_task_configs("c", [{"v": "fresh0"}])
    snap = store.snapshot()
    assert snap.inconsistent_connectors == frozenset()
    assert snap.task_config_list("c") == [{"v": "fresh0"}]


def test_tasks_of_a_deleted_connector_are_ignored(log: ConfigLog) -> None:
    backend = log.backend()
    backend.create_topic(log.topic, 1, {"cleanup.policy": "compact"})
    # Compaction removed the connector config and its tombstone; its tasks remain.
    produce_raw(backend, log.topic, [("task-gone-0", '{"properties":{"a":"b"}}'),
                                     ("commit-gone", '{"tasks":1}'),
                                     ("target-state-gone", None)])
    snap = log.store().snapshot()
    assert snap.connectors() == [] and snap.task_configs == {}
    assert snap.connector_task_counts == {} and snap.target_states == {}


def test_remove_writes_tombstones_and_drops_tasks(log: ConfigLog) -> None:
    store = log.store()
    store.put_connector_config("c1", CONFIG, TargetState.PAUSED)
    store.put_task_configs("c1", [TASK0])
    store.put_connector_config("keep", {"connector.class": "X"})
    store.remove_connector_config("c1")
    snap = store.snapshot()
    assert snap.connectors() == ["keep"]
    assert snap.task_configs == {} and "c1" not in snap.connector_task_counts
    assert "c1" not in snap.target_states
    assert raw_records(log.backend(), log.topic)[-2:] == [("connector-c1", None),
                                                          ("target-state-c1", None)]
    # Re-created with the same name: starts fresh, STARTED.
    store.put_connector_config("c1", {"connector.class": "Y"})
    snap = store.snapshot()
    assert snap.target_state("c1") == TargetState.STARTED and snap.tasks("c1") == []


def test_restarted_store_rebuilds_the_same_state(log: ConfigLog) -> None:
    store = log.store()
    store.put_connector_config("a", CONFIG, TargetState.STOPPED)
    store.put_task_configs("a", [TASK0, TASK1])
    store.put_connector_config("b", {"connector.class": "X"})
    store.put_task_configs("b", [TASK1])
    store.put_target_state("b", TargetState.PAUSED)
    store.put_session_key(SessionKey(b"abc" * 8, "HmacSHA256", 99))
    store.put_connector_config("gone", {"connector.class": "Z"})
    store.remove_connector_config("gone")
    store.refresh(WAIT_S)
    before = store.snapshot()
    store.stop()

    again = log.store()
    assert again.snapshot() == before
    assert again.offset == before.offset == len(raw_records(log.backend(), log.topic))


def test_stopped_store_refuses_to_wait(log: ConfigLog) -> None:
    store = log.store()
    store.stop()
    with pytest.raises(ConnectError, match="not running"):
        store.refresh(1.0)
