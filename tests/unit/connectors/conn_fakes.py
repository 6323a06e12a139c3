"""Fake runtime contexts for driving connector tasks directly in tests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConnectorContext,
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkTaskContext,
    SourceRecord,
    SourceTaskContext,
    TopicPartition,
)


def _key(partition: Mapping[str, Any]) -> str:
    return json.dumps(dict(partition), sort_keys=True)


class FakeOffsetStore(OffsetStorageReader):
    """Offsets as the runtime would store them: the latest source offset per source
    partition, round-tripped through JSON like the offsets topic does."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[str, Any]] = {}
        self.reads: list[dict[str, Any]] = []

    def put(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        self._offsets[_key(partition)] = json.loads(json.dumps(dict(offset)))

    def commit(self, records: list[SourceRecord]) -> None:
        """Store the offsets of records as if Kafka had acknowledged them all."""
        for record in records:
            assert record.source_partition is not None and record.source_offset is not None
            self.put(record.source_partition, record.source_offset)

    def offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        self.reads.append(dict(partition))
        return self._offsets.get(_key(partition))


class FakeSourceTaskContext(SourceTaskContext):
    def __init__(self, props: Mapping[str, str], store: FakeOffsetStore | None = None) -> None:
        self._props = dict(props)
        self.store = store if store is not None else FakeOffsetStore()

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self.store


class FakeSinkTaskContext(SinkTaskContext):
    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self.commit_requests = 0

    def configs(self) -> Mapping[str, str]:
        return self._props

    def offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        raise AssertionError("the FileStream sink never rewinds")

    def timeout(self, timeout_ms: int) -> None:
        raise AssertionError("the FileStream sink never asks for a retry")

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset()

    def pause(self, *partitions: TopicPartition) -> None:
        raise AssertionError("unexpected pause")

    def resume(self, *partitions: TopicPartition) -> None:
        raise AssertionError("unexpected resume")

    def request_commit(self) -> None:
        self.commit_requests += 1

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return None


class FakeConnectorContext(ConnectorContext):
    def __init__(self) -> None:
        self.reconfigurations = 0
        self.errors: list[BaseException] = []

    def request_task_reconfiguration(self) -> None:
        self.reconfigurations += 1

    def raise_error(self, error: BaseException) -> None:
        self.errors.append(error)
