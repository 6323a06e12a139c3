"""Connector, task, context and plugin-protocol contracts: defaults and required methods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from connect.api import (
    Config,
    ConfigData,
    ConfigDef,
    ConfigType,
    ConnectorContext,
    ConnectorTransactionBoundaries,
    Converter,
    HeaderConverter,
    Importance,
    OffsetAndMetadata,
    OffsetStorageReader,
    Predicate,
    SchemaAndValue,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    SourceConnector,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
    Task,
    TopicPartition,
    Transformation,
    Versioned,
)
from connect.api.errors import ConfigError, IllegalWorkerStateError

CONFIG_DEF = ConfigDef().define(
    "file", ConfigType.STRING, importance=Importance.HIGH, documentation="File to read."
)


class LineSourceTask(SourceTask):
    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.file = props["file"]

    def poll(self) -> Sequence[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


class LineSource(SourceConnector):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.calls.append(f"start {props['file']}")

    def task_class(self) -> type[Task]:
        return LineSourceTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        return [{"file": "x"}]

    def stop(self) -> None:
        self.calls.append("stop")

    def config(self) -> ConfigDef:
        return CONFIG_DEF


class RecordingContext(ConnectorContext):
    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def request_task_reconfiguration(self) -> None:
        pass

    def raise_error(self, error: BaseException) -> None:
        self.errors.append(error)


def test_connector_context_is_unavailable_before_initialize():
    connector = LineSource()
    with pytest.raises(IllegalWorkerStateError, match=r"LineSource.context.*initialize\(\)"):
        _ = connector.context
    context = RecordingContext()
    connector.initialize(context)
    assert connector.context is context


def test_default_reconfigure_restarts():
    connector = LineSource()
    connector.reconfigure({"file": "new"})
    assert connector.calls == ["stop", "start new"]


def test_default_validate_checks_the_declared_config():
    result = LineSource().validate({})
    assert isinstance(result, Config) and result.error_count == 1
    assert result.config_values[0].errors == [
        'Missing required configuration "file" which has no default value.'
    ]
    assert LineSource().validate({"file": "/tmp/x"}).error_count == 0


def test_source_connector_hooks_have_safe_defaults():
    connector = LineSource()
    assert connector.exactly_once_support({}) is None
    assert connector.can_define_transaction_boundaries({}) is (
        ConnectorTransactionBoundaries.UNSUPPORTED
    )
    assert connector.alter_offsets({}, [({"file": "x"}, None)]) is False
    assert isinstance(connector, Versioned)


def test_incomplete_plugins_cannot_be_instantiated():
    class NoPoll(SourceTask):
        def version(self) -> str:
            return "1"

        def start(self, props: Mapping[str, str]) -> None:
            pass

        def stop(self) -> None:
            pass

    with pytest.raises(TypeError, match="poll"):
        NoPoll()  # type: ignore[abstract]

    class NoTaskConfigs(SinkConnector):
        def version(self) -> str:
            return "1"

    with pytest.raises(TypeError, match="task_configs"):
        NoTaskConfigs()  # type: ignore[abstract]


class FakeOffsetReader(OffsetStorageReader):
    def __init__(self, stored: dict[str, dict[str, Any]]) -> None:
        self.stored = stored

    def offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return self.stored.get(partition["file"])


class FakeSourceContext(SourceTaskContext):
    def configs(self) -> Mapping[str, str]:
        return {"file": "a"}

    def offset_storage_reader(self) -> OffsetStorageReader:
        return FakeOffsetReader({"a": {"position": 3}})


def test_source_task_defaults_and_offset_reader_pairs():
    task = LineSourceTask()
    with pytest.raises(IllegalWorkerStateError):
        _ = task.context
    task.initialize(FakeSourceContext())
    task.commit()
    task.commit_record(SourceRecord(topic="t"), None)
    assert task.context.transaction_context() is None
    reader = task.context.offset_storage_reader()
    assert reader.offsets([{"file": "b"}, {"file": "a"}]) == [
        ({"file": "b"}, None),
        ({"file": "a"}, {"position": 3}),
    ]


class BufferingSinkTask(SinkTask):
    def __init__(self) -> None:
        self.flushed: list[Mapping[TopicPartition, OffsetAndMetadata]] = []

    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        pass

    def flush(self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.flushed.append(current_offsets)

    def stop(self) -> None:
        pass


def test_default_pre_commit_flushes_then_commits_everything():
    task = BufferingSinkTask()
    offsets = {TopicPartition("t", 0): OffsetAndMetadata(10)}
    assert task.pre_commit(offsets) == offsets
    assert task.flushed == [offsets]
    task.open([TopicPartition("t", 0)])
    task.close([TopicPartition("t", 0)])
    assert SinkTask.TOPICS_CONFIG == "topics" and SinkTask.TOPICS_REGEX_CONFIG == "topics.regex"


class SeekRecordingContext(SinkTaskContext):
    def __init__(self) -> None:
        self.seeks: list[Mapping[TopicPartition, int]] = []

    def configs(self) -> Mapping[str, str]:
        return {}

    def offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.seeks.append(dict(offsets))

    def timeout(self, timeout_ms: int) -> None:
        pass

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset()

    def pause(self, *partitions: TopicPartition) -> None:
        pass

    def resume(self, *partitions: TopicPartition) -> None:
        pass

    def request_commit(self) -> None:
        pass

    def errant_record_reporter(self) -> None:
        return None


def test_sink_context_offset_delegates_to_offsets():
    context = SeekRecordingContext()
    context.offset(TopicPartition("t", 1), 50)
    assert context.seeks == [{TopicPartition("t", 1): 50}]


def test_converter_protocol_subclasses_inherit_config_and_close():
    class Utf8(Converter):
        def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
            pass

        def from_connect_data(self, topic, schema, value, headers=None):  # type: ignore[no-untyped-def]
            return None if value is None else value.encode()

        def to_connect_data(self, topic, value, headers=None):  # type: ignore[no-untyped-def]
            return SchemaAndValue(None, None if value is None else value.decode())

    converter = Utf8()
    assert converter.config().names() == [] and converter.close() is None
    assert isinstance(converter, Converter) and not isinstance(converter, HeaderConverter)


def test_duck_typed_plugins_are_recognised_structurally():
    class Identity:
        def configure(self, configs: Mapping[str, Any]) -> None: ...
        def apply(self, record: Any) -> Any:
            return record

        def config(self) -> ConfigDef:
            return ConfigDef()

        def close(self) -> None: ...

    assert isinstance(Identity(), Transformation)
    assert not isinstance(Identity(), Predicate)


def test_config_data_is_read_only_and_checks_its_ttl():
    data = ConfigData({"password": "x"}, ttl=60_000)
    with pytest.raises(TypeError):
        data.data["password"] = "y"  # type: ignore[index]
    assert ConfigData().data == {} and ConfigData().ttl is None
    with pytest.raises(ConfigError, match="ttl"):
        ConfigData({}, ttl=-1)
