"""Connect's ``/metrics`` on the REST port of a real standalone worker (``embedded:``),
scraped after known workloads: a source writing N records, a sink reading N with two
poison records sent to the dead letter queue, and a task that always fails (its FAILED
state in ``kafka_connect_connector_task_status``)."""

from __future__ import annotations

import json

import pytest
from metrics_scrape import scrape
from rt_test_connectors import REC, Harness, end_offset, wait_for

from core.backends import ProducerRecord

pytestmark = pytest.mark.integration


@pytest.fixture
def harness(tmp_path):
    h = Harness(tmp_path / "log")
    yield h
    h.close()


def test_source_records_and_status_gauges(harness):
    url = harness.rest()
    harness.create("src", {"connector.class": "ScriptedSource", "topic": "out", "count": "5",
                           "tasks.max": "2", "fail.tasks": "1"})
    harness.wait_task("src", "RUNNING", 0)
    harness.wait_task("src", "FAILED", 1)
    wait_for(lambda: end_offset(harness.backend, "out") == 5, "5 records written")

    def written() -> float:
        return scrape(url).value("kafka_connect_source_task_source_record_write_total",
                                 connector="src", task="0")

    wait_for(lambda: written() == 5, "the write count to reach 5")
    metrics = scrape(url)
    assert metrics.value("kafka_connect_source_task_source_record_poll_total",
                         connector="src", task="0") == 5
    assert metrics.value("kafka_connect_connector_status", connector="src", type="source",
                         status="running") == 1
    assert metrics.value("kafka_connect_connector_task_status", connector="src", task="0",
                         status="running") == 1
    assert metrics.value("kafka_connect_connector_task_status", connector="src", task="1",
                         status="failed") == 1
    assert not metrics.matching("kafka_connect_connector_task_status", connector="src",
                                task="1", status="running")
    assert metrics.value("kafka_connect_worker_connector_failed_task_count",
                         connector="src") == 1
    assert metrics.value("kafka_connect_worker_connector_running_task_count",
                         connector="src") == 1
    assert metrics.value("kafka_connect_worker_connector_count") == 1
    # The source's offsets were flushed at least once (offset.flush.interval.ms=100).
    wait_for(lambda: scrape(url).value("ferry_connect_offset_commit_completion_total",
                                       connector="src", task="0") >= 1, "an offset commit")
    assert REC.task_starts[("src", 1)] >= 1


def test_sink_records_errors_and_dead_letter_queue(harness):
    url = harness.rest()
    harness.backend.create_topic("in", 1)
    values = [json.dumps({"n": i}).encode() for i in range(8)]
    values[2] = values[5] = b"POISON not json"
    harness.backend.produce("in", [ProducerRecord(None, v, []) for v in values])
    harness.create("snk", {"connector.class": "CollectingSink", "topics": "in",
                           "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                           "value.converter.schemas.enable": "false",
                           "errors.tolerance": "all",
                           "errors.deadletterqueue.topic.name": "dlq",
                           "errors.deadletterqueue.topic.replication.factor": "1"})
    harness.wait_task("snk", "RUNNING")

    def read() -> float:
        return scrape(url).value("kafka_connect_sink_task_sink_record_read_total",
                                 connector="snk", task="0")

    wait_for(lambda: read() == 8, "8 records read")
    wait_for(lambda: scrape(url).value("kafka_connect_sink_task_sink_record_send_total",
                                       connector="snk", task="0") == 6, "6 records put")
    metrics = scrape(url)
    for name in ("kafka_connect_task_error_total_record_errors",
                 "kafka_connect_task_error_total_records_skipped",
                 "kafka_connect_task_error_deadletterqueue_produce_requests"):
        assert metrics.value(name, connector="snk", task="0") == 2, name
    assert metrics.value("kafka_connect_task_error_deadletterqueue_produce_failures",
                         connector="snk", task="0") == 0
    assert end_offset(harness.backend, "dlq") == 2
    assert metrics.value("kafka_connect_connector_status", connector="snk", type="sink",
                         status="running") == 1


def test_deleted_connector_leaves_the_scrape(harness):
    url = harness.rest()
    harness.create("brief", {"connector.class": "ScriptedSource", "topic": "o2",
                             "count": "1"})
    harness.wait_task("brief", "RUNNING")
    assert scrape(url).matching("kafka_connect_connector_status", connector="brief")
    harness.herder.delete_connector("brief")
    wait_for(lambda: not scrape(url).matching("kafka_connect_connector_task_status",
                                              connector="brief"), "the task's series to go")
    assert not scrape(url).matching("kafka_connect_connector_status", connector="brief")
