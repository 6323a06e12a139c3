"""A standalone herder on an embedded: backend, with test connectors defined here."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import pytest

from connect.api import (
    ConfigDef,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from connect.runtime.herder import TargetState
from connect.runtime.plugins import Plugins
from connect.runtime.standalone_herder import StandaloneHerder
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig
from core.backends import OffsetSpec, TopicPartition, open_backend

SINK_RECEIVED: dict[str, list[SinkRecord]] = {}
_LOCK = threading.Lock()


class CountingSourceTask(SourceTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._topic, self._limit = props["topic"], int(props.get("limit", "10"))
        stored = self.context.offset_storage_reader().offset({"src": "counter"})
        self._next = 0 if stored is None else int(stored["n"]) + 1
        if props.get("fail") == "true":
            raise RuntimeError("boom at start")
        self._stop = threading.Event()

    def poll(self) -> Sequence[SourceRecord] | None:
        if self._next >= self._limit:
            self._stop.wait(0.05)
            return None
        n, self._next = self._next, self._next + 1
        return [SourceRecord(topic=self._topic, value={"n": n},
                             source_partition={"src": "counter"}, source_offset={"n": n})]

    def stop(self) -> None:
        self._stop.set()


class HangingSourceTask(SourceTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._forever = threading.Event()

    def poll(self) -> Sequence[SourceRecord] | None:
        self._forever.wait()  # ignores stop() on purpose
        return None

    def stop(self) -> None:
        """Does not wake poll: the worker must abandon the thread."""


class CountingSource(SourceConnector):
    TASK: type = CountingSourceTask
    CONFIG = ConfigDef()

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type:
        return self.TASK

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{k: v for k, v in self._props.items() if k in ("topic", "limit", "fail")}]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return self.CONFIG


class HangingSource(CountingSource):
    TASK = HangingSourceTask


#: (topic, value, metadata offset) of each record BigBatchSourceTask was told was written.
ACKNOWLEDGED: list[tuple[str, object, int | None]] = []


class BigBatchSourceTask(CountingSourceTask):
    """One poll of 300 records of ~4 kB over two topics (every tenth a tombstone): the
    worker converts and produces them in several runs."""

    def poll(self) -> Sequence[SourceRecord] | None:
        if self._next >= self._limit:
            self._stop.wait(0.05)
            return None
        first, self._next = self._next, self._limit
        return [SourceRecord(topic=f"{self._topic}-{n % 2}",
                             value=None if n % 10 == 9 else f"{n:04d}" + "x" * 4000,
                             source_partition={"src": "counter"}, source_offset={"n": n})
                for n in range(first, self._limit)]

    def commit_record(self, record: SourceRecord, metadata) -> None:
        ACKNOWLEDGED.append((record.topic, record.value,
                             None if metadata is None else metadata.offset))


class BigBatchSource(CountingSource):
    TASK = BigBatchSourceTask


class OversizedSourceTask(CountingSourceTask):
    """Like CountingSourceTask, but record 5 is larger than a topic takes (1 MB)."""

    def poll(self) -> Sequence[SourceRecord] | None:
        records = super().poll()
        if records and records[0].value == {"n": 5}:
            return [dataclasses.replace(records[0], value={"n": 5, "pad": "x" * 2_000_000})]
        return records


class OversizedSource(CountingSource):
    TASK = OversizedSourceTask


class CollectingSinkTask(SinkTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._name = props["name"]

    def put(self, records: Sequence[SinkRecord]) -> None:
        with _LOCK:
            SINK_RECEIVED.setdefault(self._name, []).extend(records)

    def stop(self) -> None:
        pass


class CollectingSink(SinkConnector):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type:
        return CollectingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


def wait_for(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met before the deadline")


@pytest.fixture
def make_herder(tmp_path):
    backend = open_backend(f"embedded:{tmp_path / 'log'}")
    herders: list[StandaloneHerder] = []

    def make(**worker_props: str) -> StandaloneHerder:
        plugins = Plugins({"CountingSource": CountingSource, "HangingSource": HangingSource,
                           "BigBatchSource": BigBatchSource,
                           "OversizedSource": OversizedSource,
                           "CollectingSinkConnector": CollectingSink})
        cfg = WorkerConfig.from_props({"offset.flush.interval.ms": "100",
                                       "task.shutdown.graceful.timeout.ms": "500",
                                       "offset.storage.partitions": "3",
                                       "value.converter.schemas.enable": "false",
                                       **worker_props})
        herder = StandaloneHerder(Worker(backend, cfg, plugins), "127.0.0.1:8083")
        herder.start()
        herders.append(herder)
        return herder

    yield make
    for h in herders:
        h.stop()
    backend.close()


def _source(name: str, topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "CountingSource", "topic": topic,
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1", **extra}


def test_source_to_sink_pipeline(make_herder) -> None:
    herder = make_herder()
    herder.put_connector_config("src", _source("src", "numbers", limit="20"),
                                allow_replace=False)
    wait_for(lambda: "numbers" in herder.worker.backend.list_topics())
    herder.put_connector_config("sink", {"connector.class": "CollectingSink",
                                         "topics": "numbers"}, allow_replace=False)
    wait_for(lambda: len(SINK_RECEIVED.get("sink", [])) >= 20)
    assert [r.value for r in SINK_RECEIVED["sink"]][:20] == [{"n": i} for i in range(20)]
    assert herder.connector_status("src").tasks[0].state == "RUNNING"


def test_offsets_resume_after_restart_and_key_format(make_herder) -> None:
    herder = make_herder()
    herder.put_connector_config("file-source", _source("x", "resume", limit="5"),
                                allow_replace=False)
    backend = herder.worker.backend
    wait_for(lambda: backend.list_offsets([TopicPartition("resume", 0)],
                                          OffsetSpec.LATEST).get(TopicPartition("resume", 0),
                                                                 0) >= 5
             if "resume" in backend.list_topics() else False)
    herder.stop()
    herder2 = make_herder()
    assert herder2.connectors() == []
    herder2.put_connector_config("file-source", _source("x", "resume", limit="8"),
                                 allow_replace=False)
    tp = TopicPartition("resume", 0)
    wait_for(lambda: backend.list_offsets([tp], OffsetSpec.LATEST)[tp] >= 8)
    values = [json.loads(r.value) for r in backend.fetch({tp: 0})[tp].records]
    assert [v["n"] for v in values] == list(range(8))  # no duplicates: resumed at 5
    wait_for(lambda: herder2.connector_offsets("file-source")
             == [{"partition": {"src": "counter"}, "offset": {"n": 7}}])
    raw = [r.key for res in backend.fetch({TopicPartition("connect-offsets", p): 0
                                           for p in range(3)}).values() for r in res.records]
    assert b'["file-source",{"src":"counter"}]' in raw


def test_failing_task_shows_failed_with_trace_then_restarts(make_herder) -> None:
    herder = make_herder()
    herder.put_connector_config("bad", _source("bad", "bad", fail="true",
                                               **{"errors.task.restart.backoff.initial.ms": "50"}),
                                allow_replace=False)
    wait_for(lambda: herder.connector_status("bad").tasks[0].state == "FAILED")
    assert "boom at start" in (herder.task_status("bad", 0).trace or "")
    patched = herder.patch_connector_config("bad", {"fail": None})
    assert "fail" not in patched.config
    wait_for(lambda: herder.connector_status("bad").tasks[0].state == "RUNNING")


def test_hung_task_does_not_block_others_and_is_abandoned(make_herder) -> None:
    herder = make_herder()
    herder.put_connector_config("hang", {"connector.class": "HangingSource", "topic": "h"},
                                allow_replace=False)
    herder.put_connector_config("ok", _source("ok", "ok-topic", limit="3"),
                                allow_replace=False)
    tp = TopicPartition("ok-topic", 0)
    backend = herder.worker.backend
    wait_for(lambda: "ok-topic" in backend.list_topics()
             and backend.list_offsets([tp], OffsetSpec.LATEST)[tp] >= 3)
    started = time.monotonic()
    herder.stop_connector("hang")
    assert time.monotonic() - started < 3
    assert herder.connector_status("hang").connector.state == "STOPPED"
    assert herder.connector_status("ok").tasks[0].state == "RUNNING"


def test_pause_resume_stop_and_validation(make_herder) -> None:
    herder = make_herder()
    herder.put_connector_config("p", _source("p", "p"), allow_replace=False,
                                initial_state=TargetState.PAUSED)
    wait_for(lambda: herder.connector_status("p").tasks[0].state == "PAUSED")
    herder.resume_connector("p")
    wait_for(lambda: herder.connector_status("p").tasks[0].state == "RUNNING")
    herder.stop_connector("p")
    assert herder.task_configs("p") == []
    infos = herder.validate_connector_config({"connector.class": "CountingSource",
                                              "tasks.max": "0", "errors.tolerance": "some"})
    bad = {c["value"]["name"] for c in infos["configs"] if c["value"]["errors"]}
    assert {"tasks.max", "errors.tolerance", "name"} <= bad


def test_a_large_poll_is_produced_in_runs_in_order_with_every_record_acknowledged(
        make_herder) -> None:
    from connect.runtime.worker_source_task import SEND_RUN_BYTES
    assert 3 * SEND_RUN_BYTES < 300 * 4000  # several runs
    ACKNOWLEDGED.clear()
    herder = make_herder()
    config = {**_source("big", "big", limit="300"), "connector.class": "BigBatchSource"}
    herder.put_connector_config("big", config, allow_replace=False)
    wait_for(lambda: herder.connector_offsets("big")
             == [{"partition": {"src": "counter"}, "offset": {"n": 299}}])
    backend = herder.worker.backend
    for parity in (0, 1):
        tp = TopicPartition(f"big-{parity}", 0)
        expected = [None if n % 10 == 9 else f"{n:04d}" + "x" * 4000
                    for n in range(parity, 300, 2)]
        got: list[object] = []
        for _ in range(20):  # fetches return at most max.partition.bytes each
            got += [None if r.value is None else json.loads(r.value)
                    for r in backend.fetch({tp: len(got)})[tp].records]
        assert got == expected
        acknowledged = [(value, offset) for topic, value, offset in ACKNOWLEDGED
                        if topic == tp.topic]
        assert acknowledged == [(value, i) for i, value in enumerate(expected)]


def test_a_failed_produce_fails_the_task_and_nothing_after_it_lands(make_herder) -> None:
    """A record the log refuses (too large) fails the task: the records after it are never
    produced, and no offset past the last record produced is stored."""
    herder = make_herder()
    config = {**_source("too-big", "too-big", limit="20"),
              "connector.class": "OversizedSource", "errors.task.restart.enable": "false"}
    herder.put_connector_config("too-big", config, allow_replace=False)
    wait_for(lambda: herder.connector_status("too-big").tasks[0].state == "FAILED")
    assert "RecordTooLarge" in (herder.task_status("too-big", 0).trace or "")
    backend = herder.worker.backend
    tp = TopicPartition("too-big", 0)
    assert [json.loads(r.value)["n"] for r in backend.fetch({tp: 0})[tp].records] \
        == [0, 1, 2, 3, 4]
    offsets = herder.connector_offsets("too-big")
    assert offsets in ([], [{"partition": {"src": "counter"}, "offset": {"n": 4}}])
