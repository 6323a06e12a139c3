"""Error handling of the real runtime (KIP-298 and Ferry's source DLQ) on ``embedded:``:
dead letter queues for sinks and sources, ``errors.tolerance``, ``errors.retry.timeout``,
``errors.log.*``, and what happens when a sink's ``put`` raises."""

from __future__ import annotations

import json
import logging

import pytest
from rt_test_connectors import (
    REC,
    TRANSFORM_MODULE,
    Harness,
    committed,
    end_offset,
    read_topic,
    wait_for,
)

from core.backends import ProducerRecord

pytestmark = pytest.mark.integration

ERR = "__connect.errors."
POISON = {3: b"POISON-MARK not json", 7: b"\xff\xfe POISON-MARK bad utf-8"}


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path / "log")
    yield h
    h.close()


def _produce_with_poison(h: Harness, topic: str, count: int = 10) -> list[ProducerRecord]:
    """``count`` records ``{"n": i}`` keyed ``k<i>`` with one header, except the poison
    ones at offsets 3 and 7."""
    h.backend.create_topic(topic, 1)
    records = [ProducerRecord(f"k{i}".encode(),
                              POISON.get(i, json.dumps({"n": i}).encode()),
                              [("origin", f"h{i}".encode())])
               for i in range(count)]
    h.backend.produce(topic, records)
    return records


def _sink(topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "CollectingSink", "topics": topic,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false", **extra}


def _dlq(**extra: str) -> dict[str, str]:
    return {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.topic.replication.factor": "1", **extra}


# ---------------------------------------------------------------------- sink DLQ
@pytest.mark.parametrize("context_headers", [True, False], ids=["headers", "no-headers"])
def test_sink_dlq_gets_poison_records_with_original_bytes(harness, context_headers) -> None:
    h = harness
    sent = _produce_with_poison(h, "orders")
    h.create("sink", _sink("orders", **_dlq(**{
        "errors.deadletterqueue.context.headers.enable": str(context_headers).lower()})))
    good = [{"n": i} for i in range(10) if i not in POISON]
    wait_for(lambda: REC.values("sink") == good, "the good records in order",
             detail=lambda: REC.values("sink"))
    wait_for(lambda: end_offset(h.backend, "dlq") == 2, "two DLQ records")
    wait_for(lambda: committed(h.backend, "connect-sink", "orders") == 10,
             "offsets committed past the skipped records")
    assert h.task_state("sink") == "RUNNING"

    dlq = read_topic(h.backend, "dlq")
    for record, offset in zip(dlq, sorted(POISON), strict=True):
        original = sent[offset]
        assert (record.key, record.value) == (original.key, original.value)
        headers = list(record.headers)
        assert headers[0] == ("origin", f"h{offset}".encode())  # original headers first
        context = {k[len(ERR):]: v for k, v in headers if k.startswith(ERR)}
        if not context_headers:
            assert context == {}
            assert len(headers) == 1
            continue
        assert set(context) == {"topic", "partition", "offset", "connector.name", "task.id",
                                "stage", "class.name", "exception.class.name",
                                "exception.message", "exception.stacktrace"}
        assert context["topic"] == b"orders"
        assert context["partition"] == b"0"
        assert context["offset"] == str(offset).encode()
        assert context["connector.name"] == b"sink"
        assert context["task.id"] == b"0"
        assert context["stage"] == b"VALUE_CONVERTER"
        assert b"JsonConverter" in context["class.name"]
        assert context["exception.class.name"].endswith(b"DataError")
        assert b"Converting byte[] to Kafka Connect data failed" in \
            context["exception.message"]
        assert b"Traceback" in context["exception.stacktrace"]
        assert b"DataError" in context["exception.stacktrace"]


def test_sink_put_exception_is_not_tolerated_and_not_sent_to_the_dlq(harness) -> None:
    """Kafka tolerates errors in converters and transforms only: an exception from the
    task's own ``put()`` fails the task even with ``errors.tolerance=all``, and the records
    go to no DLQ. Offsets are not committed past the refused batch."""
    h = harness
    h.backend.create_topic("t", 1)
    h.backend.produce("t", [ProducerRecord(None, json.dumps({"n": i}).encode())
                            for i in range(3)])
    h.create("put-fails", _sink("t", **_dlq(**{
        "raise.on": json.dumps({"n": 5}), "errors.task.restart.enable": "false"})))
    wait_for(lambda: REC.values("put-fails") == [{"n": i} for i in range(3)], "three records")
    wait_for(lambda: committed(h.backend, "connect-put-fails", "t") == 3, "commit at 3")
    h.backend.produce("t", [ProducerRecord(None, json.dumps({"n": i}).encode())
                            for i in range(3, 8)])
    h.wait_task("put-fails", "FAILED")
    trace = h.herder.task_status("put-fails", 0).trace or ""
    assert "RuntimeError: put refused the batch" in trace
    assert end_offset(h.backend, "dlq") == 0
    assert committed(h.backend, "connect-put-fails", "t") == 3
    assert all(v["n"] < 5 for v in REC.values("put-fails"))


def test_errant_record_reporter_sends_original_bytes_to_the_dlq(harness) -> None:
    """KIP-610: a task reports the records it cannot write; they reach the DLQ with the
    bytes consumed (as Kafka's runtime keeps the original consumer record) and the task
    goes on."""
    h = harness
    h.backend.create_topic("t", 1)
    raw = [json.dumps({"n": i}, separators=(",", ":")).encode() for i in range(5)]
    h.backend.produce("t", [ProducerRecord(f"k{i}".encode(), v) for i, v in enumerate(raw)])
    h.create("rep", _sink("t", **_dlq(**{"report.on": json.dumps({"n": 2}),
                                         "errors.deadletterqueue.context.headers.enable":
                                             "true"})))
    wait_for(lambda: committed(h.backend, "connect-rep", "t") == 5, "commit at 5")
    assert REC.values("rep") == [{"n": i} for i in (0, 1, 3, 4)]
    (dead,) = read_topic(h.backend, "dlq")
    assert (dead.key, dead.value) == (b"k2", raw[2])
    context = {k[len(ERR):]: v for k, v in dead.headers if k.startswith(ERR)}
    assert context["stage"] == b"TASK_PUT"
    assert context["offset"] == b"2"
    assert context["exception.message"] == b"cannot write {'n': 2}"


# ---------------------------------------------------------------------- source DLQ
def test_source_dlq_gets_records_a_transform_or_converter_fails_on(harness) -> None:
    """Ferry's extension: with ``errors.deadletterqueue.topic.name`` on a source
    connector, a record that a transformation or converter fails on is written to the DLQ
    as JSON (with the context headers) and the others reach the topic; its source offset
    is still committed."""
    h = harness
    values = ["a", "b", "reject-me", "c", {"__schema__": "int32", "v": "not-an-int"}, "d"]
    h.create("src", {
        "connector.class": "ScriptedSource", "topic": "out", "values": json.dumps(values),
        "value.converter": "JsonConverter", "value.converter.schemas.enable": "true",
        "transforms": "reject", "transforms.reject.type": f"{TRANSFORM_MODULE}:RejectValue",
        "transforms.reject.reject": "reject-me",
        **_dlq(**{"errors.deadletterqueue.context.headers.enable": "true"})})
    wait_for(lambda: end_offset(h.backend, "out") == 4, "four good records")
    wait_for(lambda: end_offset(h.backend, "dlq") == 2, "two DLQ records")
    payloads = [json.loads(r.value)["payload"] for r in read_topic(h.backend, "out")]
    assert payloads == ["a", "b", "c", "d"]

    dead = read_topic(h.backend, "dlq")
    bodies = [json.loads(r.value) for r in dead]
    assert [b["value"] for b in bodies] == ["reject-me", "not-an-int"]
    assert [b["source_offset"] for b in bodies] == [{"i": 2}, {"i": 4}]
    assert all(b["topic"] == "out" and b["source_partition"] == {"src": "src"}
               for b in bodies)
    stages = [{k[len(ERR):]: v for k, v in r.headers}["stage"] for r in dead]
    assert stages == [b"TRANSFORMATION", b"VALUE_CONVERTER"]
    first = {k[len(ERR):]: v for k, v in dead[0].headers}
    assert first["topic"] == b"out"
    assert first["connector.name"] == b"src"
    assert first["class.name"] == b"RejectValue"
    assert first["exception.message"] == b"RejectValue refuses 'reject-me'"
    wait_for(lambda: h.herder.connector_offsets("src")
             == [{"partition": {"src": "src"}, "offset": {"i": 5}}], "offset of the last")


# ---------------------------------------------------------------------- tolerance none
def test_tolerance_none_fails_the_task_at_the_first_poison_record(harness) -> None:
    h = harness
    h.backend.create_topic("t", 1)
    h.backend.produce("t", [ProducerRecord(None, json.dumps({"n": i}).encode())
                            for i in range(4)])
    h.create("strict", _sink("t", **{"errors.task.restart.enable": "false"}))
    wait_for(lambda: committed(h.backend, "connect-strict", "t") == 4, "commit at 4")
    h.backend.produce("t", [ProducerRecord(None, b"POISON-MARK")]
                      + [ProducerRecord(None, json.dumps({"n": i}).encode())
                         for i in range(5, 9)])
    h.wait_task("strict", "FAILED")
    trace = h.herder.task_status("strict", 0).trace or ""
    assert "Tolerance exceeded in error handler at stage VALUE_CONVERTER" in trace
    assert "DataError" in trace
    assert REC.values("strict") == [{"n": i} for i in range(4)]
    assert committed(h.backend, "connect-strict", "t") == 4
    assert h.herder.connector_status("strict").connector.state == "RUNNING"


# ---------------------------------------------------------------------- retries
def test_retriable_errors_are_retried_within_errors_retry_timeout(harness) -> None:
    """A transform raising ``RetriableError`` twice per record: with a retry timeout
    every record gets through, the task never restarts and nothing reaches the DLQ."""
    h = harness
    h.backend.create_topic("t", 1)
    h.backend.produce("t", [ProducerRecord(None, json.dumps(f"r{i}").encode())
                            for i in range(4)])
    h.create("retry", _sink("t", **_dlq(**{
        "errors.retry.timeout": "20000", "errors.retry.delay.max.ms": "20",
        "transforms": "flaky", "transforms.flaky.type": f"{TRANSFORM_MODULE}:FlakyRetriable",
        "transforms.flaky.failures": "2"})))
    wait_for(lambda: REC.values("retry") == [f"r{i}" for i in range(4)], "every record")
    assert all(REC.attempts[f"r{i}"] == 3 for i in range(4))
    assert REC.starts("retry") == 1
    assert end_offset(h.backend, "dlq") == 0


def test_retriable_errors_without_retry_timeout_are_tolerated_once(harness) -> None:
    """The same transform with the default ``errors.retry.timeout=0``: one attempt, then
    the tolerated failure sends each record to the DLQ."""
    h = harness
    h.backend.create_topic("t", 1)
    h.backend.produce("t", [ProducerRecord(None, json.dumps(f"s{i}").encode())
                            for i in range(3)])
    h.create("noretry", _sink("t", **_dlq(**{
        "transforms": "flaky", "transforms.flaky.type": f"{TRANSFORM_MODULE}:FlakyRetriable",
        "transforms.flaky.failures": "1"})))
    wait_for(lambda: end_offset(h.backend, "dlq") == 3, "three DLQ records")
    wait_for(lambda: committed(h.backend, "connect-noretry", "t") == 3, "commit at 3")
    assert REC.values("noretry") == []
    assert all(REC.attempts[f"s{i}"] == 1 for i in range(3))


# ---------------------------------------------------------------------- error log
@pytest.mark.parametrize("include", [False, True], ids=["plain", "include-messages"])
def test_errors_log_enable(harness, caplog, include) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness
    _produce_with_poison(h, "t")
    h.create("logged", _sink("t", **{
        "errors.tolerance": "all", "errors.log.enable": "true",
        "errors.log.include.messages": str(include).lower()}))
    wait_for(lambda: committed(h.backend, "connect-logged", "t") == 10, "commit at 10")
    lines = [r for r in caplog.records if r.name == "connect.runtime.retry_with_tolerance"
             and "Error encountered in task logged-0" in r.getMessage()]
    assert len(lines) == 2
    assert all(r.levelno == logging.ERROR and "VALUE_CONVERTER" in r.getMessage()
               for r in lines)
    text = "\n".join(r.getMessage() for r in lines)
    assert ("POISON-MARK" in text) is include
    assert ("offset=3" in text) is include


def test_errors_log_disabled_logs_no_record_errors(harness, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    h = harness
    _produce_with_poison(h, "t")
    h.create("quiet", _sink("t", **{"errors.tolerance": "all"}))
    wait_for(lambda: committed(h.backend, "connect-quiet", "t") == 10, "commit at 10")
    assert not [r for r in caplog.records if "Error encountered" in r.getMessage()]
    assert "POISON-MARK" not in caplog.text
