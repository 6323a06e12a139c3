"""The broker's /metrics and /health over real HTTP, after a known workload on an
in-process broker (real Kafka frames over a socket, real storage, real coordinator).

Values are exact: bytes in is the size of the batches produced, bytes out what the Fetch
returned, lag the unconsumed count; a write failure (ENOSPC injected at the log's write,
as tests/unit/log/test_disk_full.py does) turns /health unhealthy with its reason.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import InProcessBroker, fetch_request, produce, produce_request, records
from metrics_scrape import health, scrape

from core.broker.observability import BrokerObservability
from core.group import OffsetCommit
from core.log.records import encode_batch
from core.protocol.errors import ErrorCode
from core.telemetry import ContextFilter
from tests.unit.log.disk_faults import DiskFaults, Site


@pytest.fixture
def observed(tmp_path: Path) -> Iterator[tuple[InProcessBroker, str]]:
    observability = BrokerObservability("127.0.0.1", 0)
    observability.start()
    try:
        status, body = health(observability.url)
        assert (status, body["status"]) == (503, "starting")  # before the broker serves
        broker = InProcessBroker(tmp_path, {"auto.create.topics.enable": "false"},
                                 observability=observability)
        try:
            broker.manager.create_topic("t", 2)
            yield broker, observability.url
        finally:
            broker.close()
    finally:
        observability.stop()


def test_bytes_and_messages_in_and_out_equal_the_workload(observed):
    broker, url = observed
    batches = [encode_batch(records(5)), encode_batch(records(3, start=5))]
    with contextlib.closing(broker.client()) as client:
        for batch in batches:
            assert produce(client, "t", 0, batch).error_code == ErrorCode.NONE
        assert produce(client, "t", 1, encode_batch(records(2))).error_code == 0
        answer = client.call(fetch_request([("t", 0, 0, 1 << 20)]), 12)
        assert scrape(url).value("kafka_server_socketservermetrics_connection_count",
                                 listener="PLAINTEXT") == 1
    fetched = len(answer.responses[0].partitions[0].records)
    produced = sum(map(len, batches)) + len(encode_batch(records(2)))

    metrics = scrape(url)
    assert metrics.value("kafka_server_brokertopicmetrics_bytesin_total", topic="t") == produced
    assert metrics.value("kafka_server_brokertopicmetrics_bytesin_total") == produced
    assert metrics.value("kafka_server_brokertopicmetrics_messagesin_total", topic="t") == 10
    assert metrics.value("kafka_server_brokertopicmetrics_bytesout_total", topic="t") == fetched
    assert fetched == sum(map(len, batches))  # both batches of partition 0
    assert metrics.value("kafka_server_brokertopicmetrics_totalproducerequests_total",
                         topic="t") == 3
    assert metrics.value("kafka_network_requestmetrics_requests_total",
                         request="Produce", version="9") == 3
    assert metrics.value("ferry_request_duration_seconds_count",
                         api="Produce", version="9") == 3
    assert metrics.value("kafka_network_requestmetrics_errors_total",
                         request="Produce", error="NONE") == 3
    assert metrics.value("ferry_request_duration_seconds_bucket", api="Produce", version="9",
                         le="+Inf") == 3
    assert metrics.value("kafka_log_log_size", topic="t", partition="0") == fetched
    assert metrics.value("kafka_log_log_logendoffset", topic="t", partition="0") == 8
    assert metrics.value("kafka_topic_partitions", topic="t") == 2
    assert metrics.value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert metrics.value("kafka_controller_kafkacontroller_activecontrollercount") == 1


def test_refused_batch_counts_as_rejected_bytes(observed):
    broker, url = observed
    with contextlib.closing(broker.client()) as client:
        answer = produce(client, "t", 0, b"not a record batch at all, far too short")
    assert answer.error_code != ErrorCode.NONE
    metrics = scrape(url)
    assert metrics.value("kafka_server_brokertopicmetrics_failedproducerequests_total",
                         topic="t") == 1
    assert metrics.value("kafka_server_brokertopicmetrics_bytesrejected_total",
                         topic="t") == len(b"not a record batch at all, far too short")
    assert metrics.value("kafka_server_brokertopicmetrics_bytesin_total", topic="t") == 0


def test_consumer_lag_is_the_unconsumed_count_and_clamps_to_the_log_start(observed):
    broker, url = observed
    with contextlib.closing(broker.client()) as client:
        produce(client, "t", 0, encode_batch(records(10)))
        produce(client, "t", 1, encode_batch(records(4)))
    broker.coordinator.commit_offsets("g", -1, "", None, {("t", 0): OffsetCommit(3),
                                                          ("t", 1): OffsetCommit(4)})
    metrics = scrape(url)
    assert metrics.value("kafka_consumergroup_lag", consumergroup="g", topic="t",
                         partition="0") == 7
    assert metrics.value("kafka_consumergroup_lag", consumergroup="g", topic="t",
                         partition="1") == 0
    assert metrics.value("kafka_consumergroup_lag_sum", consumergroup="g", topic="t") == 7
    assert metrics.value("kafka_consumergroup_current_offset", consumergroup="g", topic="t",
                         partition="0") == 3
    # records() are stamped in 2023: the oldest unconsumed one is that old.
    age = time.time() - 1_700_000_000
    assert metrics.value("ferry_consumergroup_lag_seconds", consumergroup="g", topic="t",
                         partition="0") == pytest.approx(age, abs=60)
    assert metrics.value("ferry_consumergroup_lag_seconds", consumergroup="g", topic="t",
                         partition="1") == 0
    assert metrics.value("kafka_consumergroup_members", consumergroup="g") == 0

    broker.manager.log("t", 0).delete_records(6)  # retention passed the commit
    metrics = scrape(url)
    assert metrics.value("kafka_consumergroup_lag", consumergroup="g", topic="t",
                         partition="0") == 4


def test_deleted_topic_leaves_the_scrape_but_not_the_total(observed):
    broker, url = observed
    broker.manager.create_topic("gone", 1)
    with contextlib.closing(broker.client()) as client:
        produce(client, "gone", 0, encode_batch(records(2)))
    before = scrape(url)
    assert before.value("kafka_server_brokertopicmetrics_messagesin_total", topic="gone") == 2
    broker.manager.delete_topic("gone")
    after = scrape(url)
    assert not after.matching("kafka_server_brokertopicmetrics_messagesin_total", topic="gone")
    assert not after.matching("kafka_log_log_size", topic="gone")
    assert after.value("kafka_server_brokertopicmetrics_messagesin_total") == 2


def test_openmetrics_on_request(observed):
    import urllib.request

    _broker, url = observed
    request = urllib.request.Request(url + "/metrics", headers={
        "Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read().decode()
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")
    assert "kafka_server_brokertopicmetrics_bytesin_total" in body


def test_health_is_unhealthy_while_the_log_directory_is_offline(observed, monkeypatch):
    broker, url = observed
    assert health(url) == (200, {"status": "healthy", "message": "broker is serving"})
    assert health(url, "/health/live")[0] == 200
    faults = DiskFaults(monkeypatch)
    faults.arm(Site("write", ".log"))
    with contextlib.closing(broker.client()) as client:
        answer = produce(client, "t", 0, encode_batch(records(1)))
        assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        status, body = health(url)
        assert status == 500 and body["status"] == "unhealthy"
        assert "offline" in body["message"] and "No space left" in body["message"]
        metrics = scrape(url)
        assert metrics.value("kafka_log_logmanager_offlinelogdirectorycount") == 1
        faults.free()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the next write probes the directory
            if produce(client, "t", 0, encode_batch(records(1))).error_code == 0:
                break
            time.sleep(0.2)
    assert health(url)[0] == 200
    assert scrape(url).value("kafka_log_logmanager_offlinelogdirectorycount") == 0


def test_a_request_that_closes_its_connection_counts_as_an_error(observed):
    broker, url = observed
    seen: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = seen.append  # type: ignore[method-assign]
    handler.addFilter(ContextFilter())
    logging.getLogger("core.broker").addHandler(handler)
    client = broker.client()
    try:
        # acks=0 to a partition that does not exist: Kafka closes the connection.
        client.send(produce_request("t", 7, encode_batch(records(1)), acks=0), 9)
        assert client.closed_by_peer()
    finally:
        client.close()
        logging.getLogger("core.broker").removeHandler(handler)
    # The line saying why names the request in its context (JSON logs' fields).
    context = next(r.ferry_context for r in seen if "acks=0" in r.getMessage())
    assert context["api_key"] == "ProduceRequest" and context["client_id"] == "wire"
    assert context["api_version"] == 9 and context["peer"].startswith("127.0.0.1:")
    metrics = scrape(url)
    assert metrics.value("kafka_network_requestmetrics_errors_total", request="Produce",
                         error="UNKNOWN_SERVER_ERROR") == 1
    assert metrics.value("kafka_network_requestmetrics_errors_total", request="Produce",
                         error="NONE") == 0


def test_health_is_unhealthy_while_the_event_loop_is_blocked(tmp_path):
    observability = BrokerObservability("127.0.0.1", 0, stuck_after_s=0.5)
    observability.start()
    broker = InProcessBroker(tmp_path, observability=observability)
    try:
        assert health(observability.url)[0] == 200
        # A handler that blocks the loop (here: a sleep on the loop's thread).
        broker.loop.call_soon_threadsafe(time.sleep, 3)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            status, body = health(observability.url)
            if status == 500:
                break
            time.sleep(0.1)
        assert status == 500 and "event loop has not run" in body["message"], body
        deadline = time.monotonic() + 10
        while health(observability.url)[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert health(observability.url)[0] == 200  # the loop runs again
    finally:
        broker.close()
        observability.stop()


def test_log_flushes_are_timed(observed):
    broker, url = observed
    before = scrape(url).value("ferry_log_flush_duration_seconds_count")
    with contextlib.closing(broker.client()) as client:
        produce(client, "t", 0, encode_batch(records(3)), acks=1)  # no fsync
        assert scrape(url).value("ferry_log_flush_duration_seconds_count") == before
        produce(client, "t", 0, encode_batch(records(3)), acks=-1)  # fsynced (the default)
    broker.manager.log("t", 0).flush()  # as flush.ms would
    metrics = scrape(url)
    assert metrics.value("ferry_log_flush_duration_seconds_count") == before + 2
    assert metrics.value("ferry_log_flush_duration_seconds_bucket", le="+Inf") == before + 2
    assert metrics.value("ferry_log_flush_duration_seconds_sum") > 0


def test_quota_throttling_is_counted(observed):
    from core.broker.security.quotas import QuotaAlteration

    broker, url = observed
    broker.state.quotas.alter([QuotaAlteration((("client-id", None),),
                                               {"producer_byte_rate": 10})], False)
    with contextlib.closing(broker.client()) as client:
        response = client.call(produce_request("t", 0, encode_batch(records(50))), 9)
    assert response.throttle_time_ms > 0
    seconds = scrape(url).value("ferry_quota_throttle_seconds_total",
                                quota="producer_byte_rate")
    assert seconds == pytest.approx(response.throttle_time_ms / 1000, abs=0.001)
