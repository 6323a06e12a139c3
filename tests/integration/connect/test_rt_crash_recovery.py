"""At-least-once delivery across a crash: ``ferry connect standalone`` with a FileStreamSource
(input file to a topic) and a FileStreamSink (topic to an output file) is SIGKILLed
mid-stream and started again the same way; no line is lost and the only duplicates are
the re-deliveries after the last offset commits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from connect_process import ConnectProcess

from core.backends import OffsetSpec, TopicPartition, open_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 20000
LINE_BYTES = 9  # "L000123E\n": fixed width, so no line is a prefix of another


def line(i: int) -> str:
    return f"L{i:06d}E"


DEADLINE_S = 30.0


class StandaloneWorker(ConnectProcess):
    """``ferry connect standalone`` on ``embedded:<dir>`` with a source and a sink."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(
            tmp,
            "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "offset.flush.interval.ms=200\noffset.storage.partitions=1\n",
            {"source": {"name": "source", "config": {
                "connector.class": "FileStreamSource", "file": str(tmp / "in.txt"),
                "topic": "lines", "batch.size": "500",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1"}},
             "sink": {"name": "sink", "config": {
                 "connector.class": "FileStreamSink", "file": str(tmp / "out.txt"),
                 "topics": "lines"}}},
            timeout=DEADLINE_S)

    def offsets(self, name: str) -> list[dict[str, Any]]:
        found = self.get(f"/connectors/{name}/offsets")
        return found["offsets"] if found is not None else []


def _committed_at_kill(data: Path, source_file: Path) -> tuple[int, int]:
    """(sink group offset, source byte position) as stored when the worker died."""
    with open_backend(f"embedded:{data}") as log:
        tp = TopicPartition("lines", 0)
        sink = log.fetch_offsets("connect-sink", [tp]).get(tp)
        position = 0
        offsets_tp = TopicPartition("connect-offsets", 0)
        end = log.list_offsets([offsets_tp], OffsetSpec.LATEST)[offsets_tp]
        at = 0
        key = json.dumps(["source", {"filename": str(source_file)}], separators=(",", ":"))
        while at < end:
            records = log.fetch({offsets_tp: at}, max_wait_ms=100)[offsets_tp].records
            for r in records:
                if r.key == key.encode():
                    position = 0 if r.value is None else json.loads(r.value)["position"]
            at = records[-1].offset + 1 if records else at
    return (0 if sink is None else sink.offset), position


def _topic(data: Path) -> list[str]:
    with open_backend(f"embedded:{data}") as log:
        tp = TopicPartition("lines", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        out: list[str] = []
        while len(out) < end:
            records = log.fetch({tp: len(out)}, max_wait_ms=100)[tp].records
            out += [r.value.decode() for r in records]
    return out


def test_sigkill_mid_stream_loses_nothing_and_duplicates_only_after_the_last_commit(
        tmp_path: Path) -> None:
    """Exact statement checked. Let ``lines`` be the N input lines, ``P`` the source's byte
    position and ``C`` the sink group ``connect-sink``'s offset, both as committed when
    the worker was SIGKILLed (read from the log afterwards), ``L = P / 9`` the lines
    before P, and ``S`` the complete lines of the output file at the kill. Then:

    * the topic is ``lines[:b] + lines[L:]`` for some ``b >= L``: the source re-read only
      what followed its last offset flush;
    * the output file is ``S + topic[C:]`` with ``S == topic[:len(S)]`` and
      ``len(S) >= C``: the sink re-delivered only what followed its last commit, and what
      it wrote before the crash stays in order;
    * hence every line is in the output, in order, and a line appears twice only if its
      number is ``>= min(L, number of topic[C])``.
    """
    source_file, out_file = tmp_path / "in.txt", tmp_path / "out.txt"
    written = 0

    def append(upto: int) -> None:
        nonlocal written
        with open(source_file, "a", encoding="ascii") as fh:
            fh.write("".join(line(i) + "\n" for i in range(written, upto)))
        written = upto

    def output_lines() -> list[str]:
        return out_file.read_text().splitlines() if out_file.exists() else []

    append(1000)
    worker = StandaloneWorker(tmp_path)
    worker.start()
    try:
        # Keep the stream flowing; kill once both connectors committed and the sink wrote
        # a good part, while the input is still being appended.
        def ready() -> bool:
            if written < N // 2:
                append(written + 250)
            return (len(output_lines()) >= 2000 and bool(worker.offsets("sink"))
                    and bool(worker.offsets("source")))

        worker.wait(ready, "committed offsets and 2000 output lines")
        append(min(written + 250, N))  # records in flight at the kill
        worker.kill()
    finally:
        if worker.proc is not None and worker.proc.poll() is None:
            worker.kill()
    snapshot = out_file.read_text()
    sink_committed, source_position = _committed_at_kill(tmp_path / "data", source_file)
    assert source_position % LINE_BYTES == 0
    source_lines = source_position // LINE_BYTES
    assert 0 < source_lines <= written and sink_committed > 0

    append(N)
    worker.start()
    try:
        worker.wait(lambda: line(N - 1) in output_lines(), f"line {N - 1} in the output",
                    timeout=60)
    finally:
        assert worker.stop() == 0, worker.output()

    expected = [line(i) for i in range(N)]
    topic = _topic(tmp_path / "data")
    b = len(topic) - (N - source_lines)
    assert b >= source_lines, (b, source_lines)
    assert topic[:b] == expected[:b]
    assert topic[b:] == expected[source_lines:]

    output = output_lines()
    before = snapshot.split("\n")
    partial = before.pop()  # "" when the file ended with a complete line
    if partial:
        # A write torn by the kill: the sink terminates it before appending.
        assert any(e.startswith(partial) for e in expected), partial
        assert output[len(before)] == partial
        output = output[:len(before)] + output[len(before) + 1:]
    assert len(before) >= sink_committed
    assert before == topic[:len(before)]
    assert output == before + topic[sink_committed:]
    assert set(output) == set(expected)
    first_redelivered = min(source_lines, int(topic[sink_committed][1:7])
                            if sink_committed < len(topic) else N)
    seen: set[str] = set()
    for text in output:
        if text in seen:
            assert int(text[1:7]) >= first_redelivered, text
        seen.add(text)


def test_file_sink_ends_a_torn_last_line_before_appending(tmp_path: Path) -> None:
    """A kill inside a write can leave half a line at the end of the sink's file; the
    restarted task ends it, so the first re-delivered record keeps a line of its own."""
    from connect.api import SinkRecord
    from connectors.file import FileStreamSinkTask

    out = tmp_path / "out.txt"
    out.write_text("L000001E\nL0000")
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    task.put([SinkRecord(topic="t", kafka_partition=0, kafka_offset=2, value="L000002E")])
    task.flush({})
    task.stop()
    assert out.read_text() == "L000001E\nL0000\nL000002E\n"
    task = FileStreamSinkTask()
    task.start({"file": str(out)})  # a complete file is left alone
    task.stop()
    assert out.read_text() == "L000001E\nL0000\nL000002E\n"
