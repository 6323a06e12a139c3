"""FileStreamSourceTask/Connector driven directly: lines, Kafka's offsets, resume, tail."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

import pytest
from conn_fakes import FakeConnectorContext, FakeOffsetStore, FakeSourceTaskContext

from connect.api import ConfigError, ConnectError, ExactlyOnceSupport, Schema, SourceRecord
from connectors.file import FileStreamSourceConnector, FileStreamSourceTask


def start_task(
    path: Path | None, store: FakeOffsetStore | None = None, **extra: str
) -> FileStreamSourceTask:
    props = {"topic": "lines", **extra}
    if path is not None:
        props["file"] = str(path)
    task = FileStreamSourceTask(idle_wait_s=0.01)
    task.initialize(FakeSourceTaskContext(props, store))
    task.start(props)
    return task


def poll_all(task: FileStreamSourceTask) -> list[SourceRecord]:
    """Poll until a poll returns nothing (the task has read all it can for now)."""
    records: list[SourceRecord] = []
    for _ in range(1000):
        batch = task.poll()
        if not batch:
            return records
        records.extend(batch)
    raise AssertionError("poll() kept returning records")


def values_and_positions(records: list[SourceRecord]) -> list[tuple[str, int | None]]:
    return [(r.value, r.source_offset["position"]) for r in records]  # type: ignore[index]


def test_reads_lines_with_kafkas_partition_offset_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nbb\r\nccc\rdd\n")
    task = start_task(path)
    records = poll_all(task)
    assert values_and_positions(records) == [("a", 2), ("bb", 6), ("ccc", 10), ("dd", 13)]
    for record in records:
        assert record.topic == "lines"
        assert record.source_partition == {"filename": str(path)}
        assert record.value_schema == Schema.STRING_SCHEMA
        assert record.key is None and record.key_schema is None
        assert record.timestamp is not None
    task.stop()


def test_positions_count_bytes_of_multibyte_text(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("héllo\n€\n".encode())
    task = start_task(path)
    assert values_and_positions(poll_all(task)) == [("héllo", 7), ("€", 11)]
    task.stop()


def test_partial_last_line_waits_for_its_terminator(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\ntw")
    task = start_task(path)
    assert values_and_positions(poll_all(task)) == [("one", 4)]
    with path.open("ab") as f:
        f.write(b"o\r")
    # A trailing "\r" may be the first half of "\r\n": not a line end yet.
    assert poll_all(task) == []
    with path.open("ab") as f:
        f.write(b"\nthree\n")
    assert values_and_positions(poll_all(task)) == [("two", 9), ("three", 15)]
    task.stop()


def test_tails_lines_appended_while_running(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"first\n")
    task = start_task(path)
    assert values_and_positions(poll_all(task)) == [("first", 6)]
    assert task.poll() is None
    with path.open("ab") as f:
        f.write(b"second\nthird\n")
    assert values_and_positions(poll_all(task)) == [("second", 13), ("third", 19)]
    task.stop()


def test_batch_size_caps_each_poll(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"1\n2\n3\n4\n5\n")
    task = start_task(path, **{"batch.size": "2"})
    sizes = []
    while batch := task.poll():
        sizes.append(len(batch))
    assert sizes == [2, 2, 1]
    task.stop()


def test_resumes_after_the_stored_offset(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nbb\nccc\n")
    store = FakeOffsetStore()
    first = start_task(path, store)
    records = poll_all(first)
    store.commit(records[:2])
    first.stop()

    second = start_task(path, store)
    assert values_and_positions(poll_all(second)) == [("ccc", 9)]
    assert store.reads[-1] == {"filename": str(path)}
    second.stop()


def test_understands_an_offset_stored_by_kafka_connect(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"old\nnew\n")
    store = FakeOffsetStore()
    # What Kafka's FileStreamSourceTask stores: {"filename": path} -> {"position": 4}.
    store.put({"filename": str(path)}, {"position": 4})
    task = start_task(path, store)
    assert values_and_positions(poll_all(task)) == [("new", 8)]
    task.stop()


@pytest.mark.parametrize("position", ["4", 4.0, True, [4]])
def test_an_offset_of_the_wrong_type_fails_the_task(tmp_path: Path, position: object) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"x\n")
    store = FakeOffsetStore()
    store.put({"filename": str(path)}, {"position": position})
    task = start_task(path, store)
    with pytest.raises(ConnectError, match="incorrect type"):
        task.poll()
    task.stop()


def test_waits_for_a_missing_file_and_reads_it_once_created(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "later.txt"
    task = start_task(path)
    with caplog.at_level(logging.WARNING, logger="connectors.file.source_task"):
        assert task.poll() is None
        assert task.poll() is None
    warnings = [r for r in caplog.records if "Couldn't find file" in r.getMessage()]
    assert len(warnings) == 1
    path.write_bytes(b"hello\n")
    assert values_and_positions(poll_all(task)) == [("hello", 6)]
    task.stop()


def test_an_unreadable_path_fails_the_task(tmp_path: Path) -> None:
    task = start_task(tmp_path)  # a directory: open() fails with IsADirectoryError
    with pytest.raises(ConnectError, match="Error while trying to open"):
        task.poll()
    task.stop()


def test_stop_wakes_a_waiting_poll(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"")
    props = {"topic": "lines", "file": str(path)}
    task = FileStreamSourceTask(idle_wait_s=60.0)
    task.initialize(FakeSourceTaskContext(props))
    task.start(props)
    result: list[object] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    poller.start()
    task.stop()
    poller.join(timeout=10)
    assert not poller.is_alive()
    assert result == [None]
    assert task.poll() is None


def test_reads_stdin_without_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    read_fd, write_fd = os.pipe()
    with open(read_fd, encoding="utf-8") as fake_stdin:
        monkeypatch.setattr(sys, "stdin", fake_stdin)
        task = start_task(None)
        os.write(write_fd, b"x\ny")
        records = poll_all(task)
        assert values_and_positions(records) == [("x", None)]
        assert records[0].source_partition == {"filename": "stdin"}
        os.close(write_fd)
        # The line left unterminated at the end of stdin can never complete.
        assert values_and_positions(poll_all(task)) == [("y", None)]
        assert task.poll() is None
        task.stop()


def test_connector_runs_exactly_one_task_with_its_config() -> None:
    connector = FileStreamSourceConnector()
    connector.initialize(FakeConnectorContext())
    props = {"file": "/tmp/x", "topic": "t", "batch.size": "10"}
    connector.start(props)
    assert connector.task_class() is FileStreamSourceTask
    assert connector.task_configs(3) == [props]
    connector.stop()


def test_connector_requires_a_topic() -> None:
    connector = FileStreamSourceConnector()
    with pytest.raises(ConfigError, match="topic"):
        connector.start({"file": "/tmp/x"})
    result = connector.validate({"file": "/tmp/x"})
    assert result.error_count == 1
    defaults = connector.config().default_values()
    assert defaults == {"file": None, "batch.size": 2000}


def test_exactly_once_needs_a_file() -> None:
    connector = FileStreamSourceConnector()
    assert connector.exactly_once_support({"topic": "t", "file": "f"}) is (
        ExactlyOnceSupport.SUPPORTED
    )
    assert connector.exactly_once_support({"topic": "t"}) is ExactlyOnceSupport.UNSUPPORTED


def test_alter_offsets_checks_kafkas_offset_shape() -> None:
    connector = FileStreamSourceConnector()
    config = {"topic": "t", "file": "f"}
    assert connector.alter_offsets(config, [({"filename": "f"}, {"position": 10})])
    assert connector.alter_offsets(config, [({"anything": 1}, None)])
    bad = [
        ({"filename": "f"}, {"pos": 1}),
        ({"filename": "f"}, {"position": "1"}),
        ({"filename": "f"}, {"position": -1}),
        ({"file": "f"}, {"position": 1}),
    ]
    for partition, offset in bad:
        with pytest.raises(ConnectError):
            connector.alter_offsets(config, [(partition, offset)])
    with pytest.raises(ConnectError, match="stdin"):
        connector.alter_offsets({"topic": "t"}, [({"filename": "f"}, {"position": 1})])
