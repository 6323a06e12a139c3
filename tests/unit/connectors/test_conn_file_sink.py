"""FileStreamSinkTask/Connector driven directly: one value per line, flush is durable."""

from __future__ import annotations

from pathlib import Path

import pytest
from conn_fakes import FakeSinkTaskContext

from connect.api import (
    ConnectError,
    OffsetAndMetadata,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    TopicPartition,
)
from connectors.file import FileStreamSinkConnector, FileStreamSinkTask
from connectors.file import sink_task as sink_task_module


def record(value: object, offset: int, schema: Schema | None = None) -> SinkRecord:
    return SinkRecord(
        topic="t", kafka_partition=0, kafka_offset=offset, value_schema=schema, value=value
    )


def start_task(props: dict[str, str]) -> FileStreamSinkTask:
    task = FileStreamSinkTask()
    task.initialize(FakeSinkTaskContext(props))
    task.start(props)
    return task


def test_writes_each_value_on_its_own_line_and_pre_commit_makes_it_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = sink_task_module.os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(sink_task_module.os, "fsync", recording_fsync)
    path = tmp_path / "out.txt"
    task = start_task({"file": str(path), "topics": "t"})
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    task.put(
        [
            record("plain", 0, Schema.STRING_SCHEMA),
            record(None, 1),
            record(42, 2),
            record(Struct(schema).put("id", 7), 3, schema),
        ]
    )
    offsets = {TopicPartition("t", 0): OffsetAndMetadata(4)}
    assert task.pre_commit(offsets) == offsets
    assert synced, "pre_commit() must fsync the file through flush()"
    assert path.read_text().splitlines() == ["plain", "null", "42", "Struct(id=7)"]
    task.stop()


def test_a_restarted_task_appends(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    for run in range(2):
        task = start_task({"file": str(path)})
        task.put([record(f"run{run}", run)])
        task.flush({})
        task.stop()
    assert path.read_text() == "run0\nrun1\n"


def test_writes_to_stdout_without_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    task = start_task({"topics": "t"})
    task.put([record("to stdout", 0), record("again", 1)])
    task.flush({})
    task.stop()
    assert capsys.readouterr().out == "to stdout\nagain\n"


def test_a_file_that_cannot_be_created_fails_start(tmp_path: Path) -> None:
    with pytest.raises(ConnectError, match="Couldn't find or create file"):
        start_task({"file": str(tmp_path / "missing-dir" / "out.txt")})


def test_put_after_stop_is_an_error(tmp_path: Path) -> None:
    task = start_task({"file": str(tmp_path / "out.txt")})
    task.stop()
    with pytest.raises(ConnectError, match="no open output"):
        task.put([record("late", 0)])


def test_connector_gives_every_task_the_same_config() -> None:
    connector = FileStreamSinkConnector()
    props = {"file": "/tmp/out", "topics": "a,b"}
    connector.start(props)
    assert connector.task_class() is FileStreamSinkTask
    assert connector.task_configs(3) == [props, props, props]
    assert connector.config().default_values() == {"file": None}
    assert connector.alter_offsets(props, {TopicPartition("a", 0): 5})
    connector.stop()
