"""StatusBackingStore on a real log: the embedded backend and kafka:// on a Ferry broker.

Records are checked byte for byte against Kafka Connect's format; topics written with
Kafka Connect's exact JSON rebuild the same statuses; put_safe follows Kafka's rule.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from dist_store_fixtures import (
    BROKER_CONFIG,
    WAIT_S,
    LogHarness,
    log_fixtures,
    partition_records,
    produce_raw,
)

from connect.runtime.distributed.status_store import (
    ConnectorStatus,
    State,
    StatusBackingStore,
    TaskStatus,
    TopicStatus,
)
from connect.runtime.herder import ConnectorTaskId
from core.backends import LogBackend, OffsetSpec, TopicPartition, open_backend

# ---------------------------------------------------------------------- harness


class StatusLog(LogHarness):
    """Status stores on one log."""

    TOPIC_PREFIX = "connect-status"

    def store(self, backend: LogBackend | None = None) -> StatusBackingStore:
        store = StatusBackingStore(backend or self.backend(), topic=self.topic)
        self.on_close(lambda: store.stop(5.0))
        store.start(WAIT_S)
        return store


kafka_broker, log = log_fixtures(StatusLog, "dist-status")


def sync(*stores: StatusBackingStore) -> None:
    """Send what each store queued, then read every store to the end of the topic."""
    for store in stores:
        assert store.flush(WAIT_S)
    for store in stores:
        store.refresh(WAIT_S)


def raw_records(backend: LogBackend, topic: str) -> dict[str, list[bytes | None]]:
    """Every record's value by key, in offset order within each partition."""
    out: dict[str, list[bytes | None]] = {}
    for partition in range(backend.partition_count(topic)):
        for key, value in partition_records(backend, TopicPartition(topic, partition)):
            out.setdefault(key, []).append(value)
    return out


def record_count(backend: LogBackend, topic: str) -> int:
    tps = [TopicPartition(topic, p) for p in range(backend.partition_count(topic))]
    return sum(backend.list_offsets(tps, OffsetSpec.LATEST).values())


T0 = ConnectorTaskId("conn-a", 0)
T1 = ConnectorTaskId("conn-a", 1)


# ---------------------------------------------------------------------- tests

def test_writes_use_kafka_connects_exact_keys_and_json(log: StatusLog) -> None:
    store = log.store()
    store.put(ConnectorStatus("conn-a", State.RUNNING, "10.0.0.1:8083", 3))
    store.put(TaskStatus(T1, State.FAILED, "10.0.0.2:8083", 4, trace="Boom\n\tat x"))
    store.put_topic(TopicStatus("orders", "conn-a", 1, 1700000000123))
    store.put(TaskStatus(T0, State.DESTROYED, "10.0.0.1:8083", 4))
    sync(store)
    assert raw_records(log.backend(), log.topic) == {
        "status-connector-conn-a": [
            b'{"state":"RUNNING","trace":null,"worker_id":"10.0.0.1:8083","generation":3}'],
        "status-task-conn-a-1": [
            b'{"state":"FAILED","trace":"Boom\\n\\tat x","worker_id":"10.0.0.2:8083",'
            b'"generation":4}'],
        "status-topic-orders:connector-conn-a": [
            b'{"topic":{"name":"orders","connector":"conn-a","task":1,'
            b'"discoverTimestamp":1700000000123}}'],
        "status-task-conn-a-0": [None],
    }


def test_created_topic_is_compacted_with_five_partitions(log: StatusLog) -> None:
    log.store()
    description = log.backend().describe_topic(log.topic)
    assert len(description.partitions) == 5
    assert description.configs["cleanup.policy"] == "compact"


def test_round_trip(log: StatusLog) -> None:
    store = log.store()
    assert store.get("conn-a") is None and store.connectors() == []
    store.put(ConnectorStatus("conn-a", State.RUNNING, "w1:8083", 1))
    store.put(TaskStatus(T1, State.RUNNING, "w2:8083", 1))
    store.put(TaskStatus(T0, State.FAILED, "w1:8083", 1, "trace"))
    store.put(ConnectorStatus("conn-b", State.PAUSED, "w2:8083", 1))
    store.put_topic(TopicStatus("t2", "conn-a", 0, 5))
    store.put_topic(TopicStatus("t1", "conn-a", 1, 6))
    # Not visible before it is read back, as in Kafka.
    sync(store)
    assert store.get("conn-a") == ConnectorStatus("conn-a", State.RUNNING, "w1:8083", 1)
    assert store.get_task(T0) == TaskStatus(T0, State.FAILED, "w1:8083", 1, "trace")
    assert store.get_all("conn-a") == [TaskStatus(T0, State.FAILED, "w1:8083", 1, "trace"),
                                       TaskStatus(T1, State.RUNNING, "w2:8083", 1)]
    assert store.connectors() == ["conn-a", "conn-b"]
    assert store.get_topic("conn-a", "t1") == TopicStatus("t1", "conn-a", 1, 6)
    assert [t.topic for t in store.get_all_topics("conn-a")] == ["t1", "t2"]
    assert store.get_all_topics("conn-b") == []
    assert store.reader.connected and store.reader.caught_up

    store.reset_active_topics("conn-a")
    sync(store)
    assert store.get_all_topics("conn-a") == []


def test_two_stores_see_each_others_writes(log: StatusLog) -> None:
    a, b = log.store(), log.store()
    a.put(ConnectorStatus("conn-a", State.RUNNING, "a:8083", 2))
    b.put(TaskStatus(T0, State.RUNNING, "b:8083", 2))
    sync(a, b)
    for store in (a, b):
        assert store.get("conn-a") is not None and store.get("conn-a").worker_id == "a:8083"
        assert store.get_task(T0) is not None and store.get_task(T0).worker_id == "b:8083"


def test_put_safe_follows_kafkas_rule(log: StatusLog) -> None:
    old, new = log.store(), log.store()  # two workers
    old.put(TaskStatus(T0, State.RUNNING, "old:8083", 5))
    sync(old, new)

    # Another worker of an older generation may not overwrite.
    new.put_safe(TaskStatus(T0, State.FAILED, "new:8083", 4))
    count = record_count(log.backend(), log.topic)
    sync(old, new)
    assert record_count(log.backend(), log.topic) == count  # nothing was even written
    assert new.get_task(T0) == TaskStatus(T0, State.RUNNING, "old:8083", 5)

    # The same generation may; a newer generation takes over.
    new.put_safe(TaskStatus(T0, State.RUNNING, "new:8083", 5))
    sync(old, new)
    assert old.get_task(T0) == TaskStatus(T0, State.RUNNING, "new:8083", 5)
    new.put_safe(TaskStatus(T0, State.RUNNING, "new:8083", 6))
    sync(old, new)

    # The old worker, now a zombie of generation 5, is ignored by put_safe...
    old.put_safe(TaskStatus(T0, State.UNASSIGNED, "old:8083", 5))
    old.put_safe(ConnectorStatus("conn-a", State.RUNNING, "old:8083", 5))  # no prior: written
    sync(old, new)
    assert old.get_task(T0) == TaskStatus(T0, State.RUNNING, "new:8083", 6)
    assert new.get("conn-a") == ConnectorStatus("conn-a", State.RUNNING, "old:8083", 5)

    # ...while the same worker may always overwrite its own status, even with an older
    # generation, and put() overwrites unconditionally.
    new.put_safe(TaskStatus(T0, State.PAUSED, "new:8083", 1))
    sync(old, new)
    assert old.get_task(T0) == TaskStatus(T0, State.PAUSED, "new:8083", 1)
    old.put(TaskStatus(T0, State.FAILED, "old:8083", 0))
    sync(old, new)
    assert new.get_task(T0) == TaskStatus(T0, State.FAILED, "old:8083", 0)


def test_stale_unassigned_task_status_is_ignored_when_read(log: StatusLog) -> None:
    store = log.store()
    backend = log.backend()
    running = '{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":3}'
    produce_raw(backend, log.topic, [
        ("status-task-conn-a-0", running),
        ("status-task-conn-a-0",
         '{"state":"UNASSIGNED","trace":null,"worker_id":"w2:8083","generation":3}'),
        ("status-task-conn-a-1", running),
        ("status-task-conn-a-1",
         '{"state":"UNASSIGNED","trace":null,"worker_id":"w2:8083","generation":4}'),
    ], one_call_each=True)
    store.refresh(WAIT_S)
    assert store.get_task(T0) == TaskStatus(T0, State.RUNNING, "w1:8083", 3)
    assert store.get_task(T1) == TaskStatus(T1, State.UNASSIGNED, "w2:8083", 4)


def test_topic_written_by_kafka_connect_rebuilds_statuses(log: StatusLog) -> None:
    backend = log.backend()
    backend.create_topic(log.topic, 5, {"cleanup.policy": "compact"})
    produce_raw(backend, log.topic, [
        ("status-connector-my-conn",
         '{"state":"RUNNING","trace":null,"worker_id":"172.17.0.3:8083","generation":12}'),
        ("status-task-my-conn-0",
         '{"state":"FAILED","trace":"org.apache.kafka.connect.errors.ConnectException: x\\n'
         '\\tat Foo.java:1","worker_id":"172.17.0.4:8083","generation":12}'),
        ("status-task-my-conn-1", '{"state":"RESTARTING","worker_id":"172.17.0.3:8083",'
                                  '"generation":11}'),
        ("status-topic-orders:connector-my-conn",
         '{"topic":{"name":"orders","connector":"my-conn","task":0,'
         '"discoverTimestamp":1717000000000}}'),
        ("status-connector-old", '{"state":"RUNNING","trace":null,"worker_id":"x:1",'
                                 '"generation":1}'),
        ("status-task-old-0", '{"state":"RUNNING","trace":null,"worker_id":"x:1",'
                              '"generation":1}'),
        ("status-task-bad-0", '{"state":"SLEEPING","worker_id":"x:1","generation":1}'),
        ("status-connector-bad", "not json"),
        ("status-topic-nonsense", '{"topic":{}}'),
        ("unrelated", '{"a":1}'),
    ], one_call_each=True)
    store = log.store(backend)
    assert store.connectors() == ["my-conn", "old"]
    assert store.get("my-conn") == ConnectorStatus("my-conn", State.RUNNING,
                                                   "172.17.0.3:8083", 12)
    first, second = store.get_all("my-conn")
    assert first.state == State.FAILED and first.trace is not None
    assert first.trace.startswith("org.apache.kafka.connect.errors.ConnectException: x\n")
    assert second == TaskStatus(ConnectorTaskId("my-conn", 1), State.RESTARTING,
                                "172.17.0.3:8083", 11)
    assert store.get_all_topics("my-conn") == [TopicStatus("orders", "my-conn", 0,
                                                           1717000000000)]
    assert store.get_task(ConnectorTaskId("bad", 0)) is None and store.get("bad") is None
    assert store.get_all("old") != []

    # A connector tombstone drops its task statuses too, as Kafka's store does. (Records
    # of different partitions have no order, so the tombstone comes in a later read.)
    produce_raw(backend, log.topic, [("status-connector-old", None)], one_call_each=True)
    store.refresh(WAIT_S)
    assert store.get("old") is None and store.get_all("old") == []
    assert store.connectors() == ["my-conn"]


def test_delete_connector_writes_tombstones(log: StatusLog) -> None:
    store = log.store()
    store.put(ConnectorStatus("conn-a", State.RUNNING, "w:1", 1))
    store.put(TaskStatus(T0, State.RUNNING, "w:1", 1))
    store.put(TaskStatus(T1, State.RUNNING, "w:1", 1))
    store.put_topic(TopicStatus("t", "conn-a", 0, 1))
    store.put(ConnectorStatus("keep", State.RUNNING, "w:1", 1))
    sync(store)
    store.delete_connector("conn-a", worker_id="w:1", generation=2)
    sync(store)
    assert store.get("conn-a") is None and store.get_all("conn-a") == []
    assert store.get_all_topics("conn-a") == [] and store.connectors() == ["keep"]
    raw = raw_records(log.backend(), log.topic)
    for key in ("status-connector-conn-a", "status-task-conn-a-0", "status-task-conn-a-1",
                "status-topic-t:connector-conn-a"):
        assert raw[key][-1] is None, key
    restarted = log.store()
    assert restarted.connectors() == ["keep"] and restarted.get_all("conn-a") == []


def test_restarted_store_rebuilds_the_same_state(log: StatusLog) -> None:
    store = log.store()
    statuses = [ConnectorStatus("conn-a", State.RUNNING, "w:1", 7),
                TaskStatus(T0, State.RUNNING, "w:2", 7),
                TaskStatus(T1, State.FAILED, "w:1", 7, "why"),
                ConnectorStatus("conn-b", State.STOPPED, "w:2", 7)]
    for status in statuses:
        store.put(status)
    store.put_topic(TopicStatus("t", "conn-b", 0, 10))
    sync(store)
    store.stop()
    again = log.store()
    assert again.get("conn-a") == statuses[0] and again.get("conn-b") == statuses[3]
    assert again.get_all("conn-a") == [statuses[1], statuses[2]]
    assert again.get_all_topics("conn-b") == [TopicStatus("t", "conn-b", 0, 10)]


@pytest.mark.integration
@pytest.mark.slow
def test_survives_the_log_going_away(tmp_path: Path) -> None:
    """A status written while the broker is down is sent once it is back; the reader says
    it lost the log meanwhile and catches up afterwards."""
    broker = BrokerProcess(tmp_path / "data", dict(BROKER_CONFIG), tmp_path / "broker.log")
    broker.start()
    config = {"client.id": "dist-status-outage", "request.timeout.ms": "1000",
              "default.api.timeout.ms": "2000", "delivery.timeout.ms": "2000",
              "retry.backoff.max.ms": "200"}
    backend = open_backend(f"kafka://{broker.bootstrap}", config)
    store = StatusBackingStore(backend, topic="connect-status")
    try:
        store.start(WAIT_S)
        store.put(ConnectorStatus("c", State.RUNNING, "w:1", 1))
        sync(store)
        broker.kill()
        deadline = time.monotonic() + 30
        while store.reader.connected and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not store.reader.connected and store.reader.last_error
        assert store.reader.seconds_since_contact() > 0
        store.put(ConnectorStatus("c", State.PAUSED, "w:1", 1))
        broker.start()
        sync(store)
        assert store.get("c") == ConnectorStatus("c", State.PAUSED, "w:1", 1)
        assert store.reader.connected
    finally:
        store.stop(5.0)
        backend.close()
        broker.stop()
