"""Fixtures of the S3 sink tests: one moto_server per module, and an in-process
standalone Connect worker on an embedded log with the installed plugins."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from moto_process import MotoServer

from connect.runtime.plugins import Plugins
from connect.runtime.standalone_herder import StandaloneHerder
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig
from core.backends import ProducerRecord, open_backend

WAIT_S = 30.0


def wait_for(cond: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = cond()
        if result:
            return result
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = MotoServer(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


class Stack:
    """An embedded log and a standalone herder with every installed connector."""

    def __init__(self, tmp: Path, **worker_props: str) -> None:
        self.backend = open_backend(f"embedded:{tmp / 'log'}")
        cfg = WorkerConfig.from_props({
            "offset.flush.interval.ms": "100", "task.shutdown.graceful.timeout.ms": "2000",
            "offset.storage.partitions": "1", "key.converter":
            "org.apache.kafka.connect.storage.StringConverter", **worker_props})
        self.herder = StandaloneHerder(Worker(self.backend, cfg, Plugins()), "127.0.0.1:8083")
        self.herder.start()

    def topic(self, name: str, partitions: int = 1) -> None:
        self.backend.create_topic(name, partitions)

    def produce(self, topic: str, values: list[Any], *, partition: int = 0,
                timestamps: list[int] | None = None, keys: list[bytes | None] | None = None
                ) -> None:
        records = []
        for i, v in enumerate(values):
            value = v if isinstance(v, bytes) or v is None else json.dumps(v).encode()
            records.append(ProducerRecord(key=keys[i] if keys else None, value=value,
                                          timestamp=timestamps[i] if timestamps else None,
                                          partition=partition))
        for start in range(0, len(records), 1000):
            self.backend.produce(topic, records[start:start + 1000])

    def sink(self, name: str, config: Mapping[str, str]) -> None:
        self.herder.put_connector_config(name, dict(config), allow_replace=True)

    def state(self, name: str) -> tuple[str, list[str]]:
        status = self.herder.connector_status(name)
        return status.connector.state, [t.state for t in status.tasks]

    def close(self) -> None:
        self.herder.stop()
        self.backend.close()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    made: list[Stack] = []

    def make(**worker_props: str) -> Stack:
        s = Stack(tmp_path / f"stack{len(made)}", **worker_props)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def s3_config(moto: MotoServer, bucket: str, **extra: str) -> dict[str, str]:
    """A connector config in Confluent's form."""
    return {"connector.class": "io.confluent.connect.s3.S3SinkConnector",
            "s3.bucket.name": bucket, "store.url": moto.url, "s3.region": "us-east-1",
            "aws.access.key.id": "test", "aws.secret.access.key": "test",
            "storage.class": "io.confluent.connect.s3.storage.S3Storage",
            "s3.retry.backoff.ms": "20", "retry.backoff.ms": "200", **extra}
