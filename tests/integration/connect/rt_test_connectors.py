"""Test connectors, transforms and a worker harness shared by the ``test_rt_*`` runtime
tests (imported by name: pytest puts this directory on ``sys.path``; not a test file).

Everything the plugins observe goes to the module-level ``REC`` recorder, keyed by
connector name, so a test reads what its tasks saw without reaching into the runtime.
The ``Harness`` is a real ``StandaloneHerder`` over a real ``Worker`` on an ``embedded:``
log, optionally with the real REST server on an ephemeral 127.0.0.1 port.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import requests

from connect.api import (
    ConfigDef,
    ConfigType,
    DataError,
    Importance,
    OffsetAndMetadata,
    RetriableError,
    Schema,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from connect.api import TopicPartition as ApiTopicPartition
from connect.rest import RestServer, bind_listener, create_app
from connect.runtime.plugins import Plugins
from connect.runtime.standalone_herder import StandaloneHerder
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig
from core.backends import LogBackend, OffsetSpec, TopicPartition, open_backend

__all__ = ["REC", "CollectingSink", "FlakyRetriable", "Harness", "RejectValue",
           "ScriptedSource", "end_offset", "read_topic", "wait_for"]

#: Bounded waits: generous for a loaded two-core machine, never a fixed sleep.
WAIT_S = 30.0


def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT_S,
             detail: Callable[[], Any] = lambda: "") -> Any:
    """Poll ``cond`` until it returns something truthy (returned); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = cond()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; "
                                 f"{detail()}")
        time.sleep(0.02)


class Recorder:
    """What test plugins saw, by connector name; thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        self.received: dict[str, list[SinkRecord]] = defaultdict(list)
        self.task_starts: dict[tuple[str, int], int] = defaultdict(int)
        self.connector_starts: dict[str, int] = defaultdict(int)
        self.task_props: dict[tuple[str, int], dict[str, str]] = {}
        self.connector_props: dict[str, dict[str, str]] = {}
        self.attempts: dict[str, int] = defaultdict(int)
        self.precommits: dict[str, list[dict[tuple[str, int], int]]] = defaultdict(list)

    def values(self, name: str) -> list[Any]:
        with self.lock:
            return [r.value for r in self.received[name]]

    def starts(self, name: str, task: int = 0) -> int:
        with self.lock:
            return self.task_starts[(name, task)]


REC = Recorder()


# ---------------------------------------------------------------------- sources
class ScriptedSourceTask(SourceTask):
    """Emits ``values`` (a JSON list) to ``topic``, one record per poll, with source
    partition ``{"src": <connector>}`` and offset ``{"i": index}``; resumes after the
    stored offset. An item ``{"__schema__": "int32", "v": X}`` is sent with that schema.
    ``count`` instead of ``values`` emits ``"v0"``, ``"v1"``, ... ``fail.starts`` makes
    the first N starts of each task raise; ``fail.tasks`` lists task ids whose every
    start raises."""

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._name = props["name"]
        self._id = int(props.get("task.id", "0"))
        with REC.lock:
            REC.task_starts[(self._name, self._id)] += 1
            attempt = REC.task_starts[(self._name, self._id)]
            REC.task_props[(self._name, self._id)] = dict(props)
        self._stop = threading.Event()
        if attempt <= int(props.get("fail.starts", "0")):
            raise RuntimeError(f"scripted start failure {attempt} of {self._name}-{self._id}")
        if str(self._id) in props.get("fail.tasks", "").split(","):
            raise RuntimeError(f"task {self._name}-{self._id} always fails")
        self._topic = props.get("topic", "")
        if "values" in props:
            self._values: list[Any] = json.loads(props["values"])
        else:
            self._values = [f"v{i}" for i in range(int(props.get("count", "0")))]
        stored = self.context.offset_storage_reader().offset({"src": self._name})
        self._next = 0 if stored is None else int(stored["i"]) + 1

    def poll(self) -> Sequence[SourceRecord] | None:
        if self._next >= len(self._values):
            self._stop.wait(0.05)
            return None
        i, self._next = self._next, self._next + 1
        item = self._values[i]
        schema = Schema.STRING_SCHEMA if isinstance(item, str) else None
        if isinstance(item, dict) and "__schema__" in item:
            schema = {"int32": Schema.INT32_SCHEMA, "string": Schema.STRING_SCHEMA}[
                item["__schema__"]]
            item = item["v"]
        return [SourceRecord(topic=self._topic, value_schema=schema, value=item,
                             source_partition={"src": self._name}, source_offset={"i": i})]

    def stop(self) -> None:
        self._stop.set()


class ScriptedSource(SourceConnector):
    """``tasks.max`` tasks, each given the connector's config plus ``task.id``; the first
    ``fail.connector.starts`` starts of the connector raise."""

    def version(self) -> str:
        return "1"

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define("topic", ConfigType.STRING, default="", importance=Importance.HIGH,
                        documentation="Where records go.")
                .define("password", ConfigType.PASSWORD, default=None,
                        importance=Importance.LOW, documentation="A secret, for tests."))

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        with REC.lock:
            REC.connector_starts[props["name"]] += 1
            REC.connector_props[props["name"]] = dict(props)
            attempt = REC.connector_starts[props["name"]]
        if attempt <= int(props.get("fail.connector.starts", "0")):
            raise RuntimeError(f"scripted connector start failure {attempt}")

    def task_class(self) -> type:
        return ScriptedSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._props, "task.id": str(i)} for i in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release."""


# ---------------------------------------------------------------------- sinks
class CollectingSinkTask(SinkTask):
    """Records what ``put`` gets in ``REC.received[<connector>]``. ``raise.on`` (a JSON
    value): ``put`` raises when a batch holds a record with that value. ``report.on``
    (a JSON value): such records go to the errant record reporter and are not kept.
    ``precommit.max``: ``pre_commit`` allows no offset above it (each call's offsets are
    recorded in ``REC.precommits``)."""

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._name = props["name"]
        self._raise_on = json.loads(props["raise.on"]) if "raise.on" in props else None
        self._report_on = json.loads(props["report.on"]) if "report.on" in props else None
        self._max = int(props["precommit.max"]) if "precommit.max" in props else None
        with REC.lock:
            REC.task_starts[(self._name, 0)] += 1
            REC.task_props[(self._name, 0)] = dict(props)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if self._raise_on is not None and any(r.value == self._raise_on for r in records):
            raise RuntimeError(f"put refused the batch: it holds {self._raise_on!r}")
        kept = []
        for r in records:
            if self._report_on is not None and r.value == self._report_on:
                reporter = self.context.errant_record_reporter()
                assert reporter is not None
                reporter.report(r, DataError(f"cannot write {r.value!r}")).result(10)
            else:
                kept.append(r)
        with REC.lock:
            REC.received[self._name].extend(kept)

    def pre_commit(self, current_offsets: Mapping[ApiTopicPartition, OffsetAndMetadata]
                   ) -> Mapping[ApiTopicPartition, OffsetAndMetadata]:
        with REC.lock:
            REC.precommits[self._name].append(
                {(tp.topic, tp.partition): om.offset for tp, om in current_offsets.items()})
        if self._max is None:
            return super().pre_commit(current_offsets)
        return {tp: OffsetAndMetadata(min(om.offset, self._max))
                for tp, om in current_offsets.items()}

    def stop(self) -> None:
        """Nothing to release."""


class CollectingSink(SinkConnector):
    def version(self) -> str:
        return "1"

    def config(self) -> ConfigDef:
        return ConfigDef()

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        with REC.lock:
            REC.connector_starts[props["name"]] += 1

    def task_class(self) -> type:
        return CollectingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        """Nothing to release."""


# ---------------------------------------------------------------------- transforms
class RejectValue:
    """Raises ``DataError`` for records whose value is in ``reject`` (comma-separated)."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._reject = {v.strip() for v in str(configs.get("reject", "")).split(",")}

    def apply(self, record: Any) -> Any:
        if str(record.value) in self._reject:
            raise DataError(f"RejectValue refuses {record.value!r}")
        return record

    def config(self) -> ConfigDef:
        return ConfigDef().define("reject", ConfigType.STRING, default="",
                                  importance=Importance.HIGH,
                                  documentation="Values to refuse.")

    def close(self) -> None:
        """Nothing to release."""


class FlakyRetriable:
    """Raises ``RetriableError`` the first ``failures`` times it sees each value (counted
    in ``REC.attempts`` by ``str(value)``), then passes the record through."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._failures = int(configs.get("failures", "2"))

    def apply(self, record: Any) -> Any:
        key = str(record.value)
        with REC.lock:
            REC.attempts[key] += 1
            attempt = REC.attempts[key]
        if attempt <= self._failures:
            raise RetriableError(f"transient failure {attempt} for {key}")
        return record

    def config(self) -> ConfigDef:
        return ConfigDef().define("failures", ConfigType.INT, default=2,
                                  importance=Importance.HIGH,
                                  documentation="Failures per value before success.")

    def close(self) -> None:
        """Nothing to release."""


# ---------------------------------------------------------------------- log helpers
def end_offset(backend: LogBackend, topic: str, partition: int = 0) -> int:
    if topic not in backend.list_topics():
        return 0
    tp = TopicPartition(topic, partition)
    return backend.list_offsets([tp], OffsetSpec.LATEST)[tp]


def read_topic(backend: LogBackend, topic: str, partition: int = 0) -> list[Any]:
    """Every record of one partition, from its start to its current end."""
    tp = TopicPartition(topic, partition)
    end = end_offset(backend, topic, partition)
    out: list[Any] = []
    position = backend.list_offsets([tp], OffsetSpec.EARLIEST)[tp]
    while position < end:
        records = backend.fetch({tp: position}, max_wait_ms=100)[tp].records
        out.extend(r for r in records if r.offset < end)
        if records:
            position = records[-1].offset + 1
    return out


def committed(backend: LogBackend, group: str, topic: str, partition: int = 0) -> int | None:
    got = backend.fetch_offsets(group, [TopicPartition(topic, partition)])
    found = got.get(TopicPartition(topic, partition))
    return None if found is None else found.offset


# ---------------------------------------------------------------------- the harness
TEST_CONNECTORS: dict[str, type] = {"ScriptedSource": ScriptedSource,
                                    "CollectingSink": CollectingSink}
TRANSFORM_MODULE = __name__


class Harness:
    """A real standalone worker on ``embedded:<dir>``; ``rest()`` adds the REST server.
    ``close()`` stops everything it started (the fixture calls it)."""

    def __init__(self, data_dir: Path, **worker_props: str) -> None:
        REC.clear()
        self.backend = open_backend(f"embedded:{data_dir}")
        self.worker_props = {"offset.flush.interval.ms": "100",
                             "task.shutdown.graceful.timeout.ms": "2000",
                             "offset.storage.partitions": "1",
                             "key.converter": "StringConverter",
                             "value.converter": "JsonConverter",
                             "value.converter.schemas.enable": "false", **worker_props}
        self._sock = bind_listener("127.0.0.1", 0)
        self.port = self._sock.getsockname()[1]
        self.herder = StandaloneHerder(
            Worker(self.backend, WorkerConfig.from_props(self.worker_props),
                   Plugins(dict(TEST_CONNECTORS))), f"127.0.0.1:{self.port}")
        self.herder.start()
        self.server: RestServer | None = None

    def rest(self) -> str:
        """Start the REST server (once); returns its base URL."""
        if self.server is None:
            self.server = RestServer(create_app(self.herder, self.worker_props),
                                     sock=self._sock)
            self.server.start()
        return self.server.url

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self.herder.put_connector_config(name, dict(config), allow_replace=False)

    def task_state(self, name: str, task: int = 0) -> str | None:
        tasks = {t.id: t for t in self.herder.connector_status(name).tasks}
        return tasks[task].state if task in tasks else None

    def wait_task(self, name: str, state: str, task: int = 0) -> None:
        wait_for(lambda: self.task_state(name, task) == state, f"{name}-{task} {state}",
                 detail=lambda: self.herder.connector_status(name).to_json())

    def close(self) -> None:
        if self.server is not None:
            self.server.stop(5.0)
        else:
            self._sock.close()
        self.herder.stop()
        self.backend.close()


def call(base: str, method: str, path: str, body: Any = None,
         **params: str) -> tuple[int, Any]:
    """One REST call: ``(status, parsed JSON body or None)``."""
    response = requests.request(method, base + path, json=body, params=params or None,
                                timeout=30)
    text = response.text
    return response.status_code, (json.loads(text) if text.strip() else None)
