"""``ferry up --metrics``: the stack's broker metrics and health on their own HTTP port."""

from __future__ import annotations

import signal

import pytest
from broker_process import free_port
from cli_helpers import Ferry, LineReader, stop
from kafka import KafkaProducer
from metrics_scrape import health, scrape

pytestmark = pytest.mark.integration


def test_up_serves_broker_metrics_and_health(ferry: Ferry) -> None:
    kafka_port, metrics_port = free_port(), free_port()
    url = f"http://127.0.0.1:{metrics_port}"
    proc = ferry.start("up", "--data-dir", str(ferry.tmp_path / "data"), "--listen",
                       f"127.0.0.1:{kafka_port}", "--metrics", f"127.0.0.1:{metrics_port}",
                       "--connect-rest", f"127.0.0.1:{free_port()}", "--no-registry",
                       log=False)
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        ready = log.wait_for(b"ferry up ready:").decode()
        assert f"metrics {url}/metrics," in ready, ready
        assert health(url) == (200, {"status": "healthy", "message": "broker is serving"})
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{kafka_port}")
        for i in range(7):
            producer.send("clicks", b"c%d" % i, partition=0)
        producer.flush(30)
        producer.close()
        metrics = scrape(url)
        assert metrics.value("kafka_server_brokertopicmetrics_messagesin_total",
                             topic="clicks") == 7
        assert metrics.value("kafka_log_log_logendoffset", topic="clicks", partition="0") == 7
    finally:
        assert stop(proc, signal.SIGTERM) == 0
    assert b"Traceback" not in log.rest()


def test_up_rejects_a_bad_metrics_address(ferry: Ferry) -> None:
    result = ferry.run("up", "--data-dir", str(ferry.tmp_path / "data"), "--metrics",
                       "nonsense", log=False)
    assert result.returncode != 0
    assert "--metrics 'nonsense'" in result.stderr.decode()
    assert b"Traceback" not in result.stderr
