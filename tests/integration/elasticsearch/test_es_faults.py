"""Faults between the Elasticsearch sink and its server, injected by a proxy in front of
osmem-server (``FaultProxy``): whole bulk requests refused with 429/503, every item of a
bulk refused 429, the server unreachable for a while or for good, credentials refused;
and validation naming ``connection.url`` when no server answers. Offsets are never
committed past a record that is not indexed."""

from __future__ import annotations

import json
import logging

import pytest
from broker_process import free_port
from es_support import FaultProxy, Http, envelope, row, self_signed_cert, sink
from rt_test_connectors import call, committed, wait_for

from core.backends import ProducerRecord

pytestmark = pytest.mark.integration


def _produce_keys(h, topic: str, n: int, start: int = 0) -> None:
    h.backend.produce(topic, [ProducerRecord(f"k{i}".encode(), envelope(row(i)))
                              for i in range(start, start + n)])


def test_429_and_5xx_are_retried_with_backoff(harness, es_url, proxy, caplog) -> None:
    """Refused requests and refused items are retried until indexed; a 429 also halves
    the requests the task keeps in flight (grown back as requests succeed)."""
    h, http = harness, Http(es_url)
    h.backend.create_topic("t", 1)
    proxy.fail_bulk(2, 503)
    proxy.fail_bulk(1, 429)
    proxy.reject_items(2)
    _produce_keys(h, "t", 10)
    with caplog.at_level(logging.INFO, logger="connectors.elasticsearch.bulk"):
        h.create("es", sink(proxy.url, "t", **{"batch.size": "3", "max.retries": "8"}))
        wait_for(lambda: committed(h.backend, "connect-es", "t") == 10, "commit at 10",
                 detail=lambda: h.herder.connector_status("es").to_json())
    assert "Server overloaded: 2 bulk requests in flight at most" in caplog.text
    assert set(http.docs("t")) == {f"k{i}" for i in range(10)}
    assert h.task_state("es") == "RUNNING"
    # 4 batches of at most 3 records, plus 5 refused attempts.
    assert proxy.bulk_calls >= 4 + 5


def test_bulk_requests_are_sized_by_bytes(harness, es_url, proxy) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("t", 1)
    _produce_keys(h, "t", 12)
    h.create("es", sink(proxy.url, "t", **{"bulk.size.bytes": "1000", "linger.ms": "5000",
                                           "flush.synchronously": "true"}))
    wait_for(lambda: committed(h.backend, "connect-es", "t") == 12, "commit at 12")
    assert len(http.docs("t")) == 12
    sizes = [len(b) for b in proxy.bulk_bodies]
    assert all(size <= 1000 for size in sizes), sizes
    assert sum(b.count(b"\n") for b in proxy.bulk_bodies) == 24  # 12 actions, 2 lines each
    assert len(sizes) >= sum(sizes) // 1000 + 1


def test_a_short_outage_is_ridden_out(harness, es_url, proxy) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("t", 1)
    _produce_keys(h, "t", 5)
    h.create("es", sink(proxy.url, "t", **{"max.retries": "12", "retry.backoff.ms": "50"}))
    wait_for(lambda: committed(h.backend, "connect-es", "t") == 5, "commit at 5")
    proxy.down = True
    _produce_keys(h, "t", 5, start=5)
    wait_for(lambda: proxy.refused >= 3, "three requests refused (retries under way)")
    assert (committed(h.backend, "connect-es", "t") or 0) == 5
    assert h.task_state("es") == "RUNNING"
    proxy.down = False
    wait_for(lambda: committed(h.backend, "connect-es", "t") == 10, "commit at 10")
    assert set(http.docs("t")) == {f"k{i}" for i in range(10)}
    assert h.task_state("es") == "RUNNING"


def test_a_long_outage_fails_the_task_without_committing_unindexed_records(
        harness, es_url, proxy) -> None:
    h, http = harness, Http(es_url)
    h.backend.create_topic("t", 1)
    _produce_keys(h, "t", 5)
    h.create("es", sink(proxy.url, "t", **{"max.retries": "2", "retry.backoff.ms": "20",
                                           "errors.task.restart.enable": "false"}))
    wait_for(lambda: committed(h.backend, "connect-es", "t") == 5, "commit at 5")
    proxy.down = True
    _produce_keys(h, "t", 20, start=5)
    h.wait_task("es", "FAILED")
    trace = h.herder.task_status("es", 0).trace or ""
    assert "failed after 2 retries" in trace
    proxy.down = False
    done = committed(h.backend, "connect-es", "t") or 0
    indexed = set(http.docs("t"))
    assert {f"k{i}" for i in range(done)} <= indexed
    assert done == 5


def test_validate_names_connection_url_when_no_server_answers(harness) -> None:
    base = harness.rest()
    url = f"http://127.0.0.1:{free_port()}"
    status, body = call(base, "PUT", "/connector-plugins/elasticsearch/config/validate",
                        {"name": "es", "connector.class": "elasticsearch", "topics": "t",
                         "connection.url": url})
    assert status == 200
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]
              if c["value"]["errors"]}
    assert list(errors) == ["connection.url"]
    assert url in errors["connection.url"][0]
    status, body = call(base, "POST", "/connectors", {"name": "es", "config": {
        "connector.class": "elasticsearch", "topics": "t", "connection.url": url}})
    assert status == 400 and "connection.url" in body["message"]


def test_validate_names_the_credentials_when_the_server_refuses_them(
        harness, proxy) -> None:
    proxy.require_auth("elastic", "right")
    base = harness.rest()
    status, body = call(base, "PUT", "/connector-plugins/elasticsearch/config/validate",
                        {"name": "es", "connector.class": "elasticsearch", "topics": "t",
                         "connection.url": proxy.url, "connection.username": "elastic",
                         "connection.password": "wrong"})
    assert status == 200
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]
              if c["value"]["errors"]}
    assert list(errors) == ["connection.username"]
    assert "refused the credentials" in errors["connection.username"][0]
    assert "wrong" not in json.dumps(body)
    ok = call(base, "PUT", "/connector-plugins/elasticsearch/config/validate",
              {"name": "es", "connector.class": "elasticsearch", "topics": "t",
               "connection.url": proxy.url, "connection.username": "elastic",
               "connection.password": "right"})[1]
    assert ok["error_count"] == 0


def test_mapping_conflict_is_logged_naming_the_field_and_both_types(
        harness, es_url, caplog) -> None:
    h, http = harness, Http(es_url)
    http.call("PUT", "/orders", {"mappings": {"properties": {"name": {"type": "long"},
                                                             "qty": {"type": "long"}}}})
    h.backend.create_topic("orders", 1)
    _produce_keys(h, "orders", 1)
    with caplog.at_level(logging.WARNING, logger="connectors.elasticsearch"):
        h.create("es", sink(es_url, "orders", **{"behavior.on.malformed.documents": "warn"}))
        wait_for(lambda: committed(h.backend, "connect-es", "orders") == 1, "commit at 1")
    text = caplog.text
    assert "Mapping conflict in index orders: field 'name' is 'long' in the index but " \
           "'text' in the record schema" in text
    assert "field 'qty'" not in text  # int16 into long is no conflict


def test_refused_credentials_fail_the_task_naming_them(harness, es_url, proxy) -> None:
    h = harness
    h.backend.create_topic("t", 1)
    _produce_keys(h, "t", 1)
    proxy.require_auth("elastic", "pw-Orig-7x")
    # Created with the right password, then the server's password changes.
    h.create("es", sink(proxy.url, "t", **{"connection.username": "elastic",
                                           "connection.password": "pw-Orig-7x"}))
    wait_for(lambda: committed(h.backend, "connect-es", "t") == 1, "commit at 1")
    proxy.require_auth("elastic", "pw-New-9y")
    h.herder.restart_task("es", 0)
    h.wait_task("es", "FAILED")
    trace = h.herder.task_status("es", 0).trace or ""
    assert "refused the credentials" in trace and "connection.password" in trace
    assert "pw-Orig-7x" not in trace


def test_https_with_a_pem_truststore_and_gzip(harness, es_url, tmp_path) -> None:
    """``elastic.security.protocol=SSL`` against an HTTPS server whose certificate is
    trusted through ``elastic.https.ssl.truststore.location`` (PEM), with gzip bodies;
    without the truststore, validation names ``connection.url`` (certificate refused)."""
    cert, key = self_signed_cert(tmp_path)
    tls = FaultProxy(es_url, tls=(cert, key))
    try:
        h, http = harness, Http(es_url)
        h.backend.create_topic("t", 1)
        _produce_keys(h, "t", 3)
        h.create("es", sink(tls.url, "t", **{
            "elastic.security.protocol": "SSL",
            "elastic.https.ssl.truststore.location": cert,
            "connection.compression": "true"}))
        wait_for(lambda: committed(h.backend, "connect-es", "t") == 3, "commit at 3")
        assert set(http.docs("t")) == {"k0", "k1", "k2"}
        infos = h.herder.validate_connector_config(
            {"name": "x", **sink(tls.url, "t", **{"elastic.security.protocol": "SSL"})})
        errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]
                  if c["value"]["errors"]}
        assert list(errors) == ["connection.url"]
        assert "CERTIFICATE_VERIFY_FAILED" in errors["connection.url"][0]
    finally:
        tls.close()


def test_a_full_buffer_blocks_put_and_fails_after_flush_timeout(
        harness, es_url, proxy) -> None:
    """``max.buffered.records`` bounds what waits in memory: against a slow server put()
    blocks (records still all arrive); when the server is slower than
    ``flush.timeout.ms`` the task fails saying so, with nothing unindexed committed."""
    h, http = harness, Http(es_url)
    h.backend.create_topic("t", 1)
    _produce_keys(h, "t", 30)
    proxy.bulk_delay_s = 0.1
    h.create("es", sink(proxy.url, "t", **{"max.buffered.records": "4", "batch.size": "2",
                                           "max.in.flight.requests": "2"}))
    wait_for(lambda: committed(h.backend, "connect-es", "t") == 30, "commit at 30")
    assert len(http.docs("t")) == 30
    assert proxy.bulk_calls >= 15

    h.backend.create_topic("slow", 1)
    h.backend.produce("slow", [ProducerRecord(f"s{i}".encode(), envelope(row(i)))
                               for i in range(10)])
    proxy.bulk_delay_s = 2.5
    h.create("slow", sink(proxy.url, "slow", **{
        "max.buffered.records": "2", "batch.size": "1", "max.in.flight.requests": "1",
        "flush.timeout.ms": "1000", "read.timeout.ms": "10000",
        "errors.task.restart.enable": "false"}))
    h.wait_task("slow", "FAILED")
    trace = h.herder.task_status("slow", 0).trace or ""
    assert "flush.timeout.ms=1000" in trace
    done = committed(h.backend, "connect-slow", "slow") or 0
    assert {f"s{i}" for i in range(done)} <= set(http.docs("slow"))
