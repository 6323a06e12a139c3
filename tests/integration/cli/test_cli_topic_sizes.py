"""``ferry topics describe`` sizes and rates against a real ``ferry broker``: sizes come from
DescribeLogDirs and equal the bytes of the partition's segment files; rates are measured
while a real client produces."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import confluent_kafka as ck
import pytest
from broker_process import BrokerProcess
from kafka.admin import KafkaAdminClient

pytestmark = pytest.mark.integration

WAIT_S = 30.0


@pytest.fixture
def broker(tmp_path: Path):
    b = BrokerProcess(tmp_path / "data", {"num.partitions": "2"}, tmp_path / "broker.log")
    b.start()
    try:
        yield b
    finally:
        b.stop()


def _ferry(broker: BrokerProcess, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "core.cli", "--log",
                             f"kafka://{broker.bootstrap}", *args],
                            capture_output=True, timeout=WAIT_S, check=False)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode()


def _field(line: str, name: str) -> str:
    return line.split(f"{name}: ")[1].split("\t")[0]


def _segment_bytes(data_dir: Path, topic: str, partition: int) -> int:
    return sum(f.stat().st_size for f in (data_dir / f"{topic}-{partition}").glob("*.log"))


def _produce(bootstrap: str, topic: str, count: int, partition: int) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=b"x" * 200 + b"%d" % i, partition=partition)
        producer.poll(0)
    assert producer.flush(WAIT_S) == 0


def test_sizes_equal_the_segment_files(broker: BrokerProcess, tmp_path: Path) -> None:
    _ferry(broker, "topics", "create", "sized", "--partitions", "2")
    _produce(broker.bootstrap, "sized", 500, partition=1)
    lines = _ferry(broker, "topics", "describe", "sized", "--interval", "0").splitlines()
    sizes = [int(_field(line, "Size")) for line in lines[1:]]
    assert sizes[0] == 0
    assert sizes[1] == _segment_bytes(tmp_path / "data", "sized", 1) > 500 * 200
    assert int(_field(lines[0], "Size")) == sum(sizes)
    assert "MessagesPerSec" not in lines[0]


def test_describe_log_dirs_answers_kafka_python(broker: BrokerProcess, tmp_path: Path) -> None:
    _ferry(broker, "topics", "create", "dirs", "--partitions", "2")
    _produce(broker.bootstrap, "dirs", 50, partition=0)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        response = admin.describe_log_dirs()
    finally:
        admin.close()
    (per_broker,) = response
    assert per_broker["broker"] == 0
    (result,) = per_broker["log_dirs"]
    assert result["error_code"] == 0
    assert Path(result["log_dir"]) == (tmp_path / "data").resolve()
    assert result["usable_bytes"] > 0
    sizes = {(t["name"], p["partition_index"]): p["partition_size"]
             for t in result["topics"] for p in t["partitions"]}
    assert sizes[("dirs", 0)] == _segment_bytes(tmp_path / "data", "dirs", 0) > 0
    assert sizes[("dirs", 1)] == 0


def test_rates_follow_a_running_producer(broker: BrokerProcess) -> None:
    _ferry(broker, "topics", "create", "busy", "--partitions", "2")
    stop = threading.Event()

    def produce() -> None:
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        deadline = time.monotonic() + WAIT_S
        while not stop.is_set() and time.monotonic() < deadline:
            producer.produce("busy", value=b"y" * 100, partition=0)
            producer.poll(0)
            time.sleep(0.001)
        producer.flush(WAIT_S)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        time.sleep(0.5)
        lines = _ferry(broker, "topics", "describe", "busy", "--interval", "2").splitlines()
    finally:
        stop.set()
        writer.join(WAIT_S)
    busy, idle = lines[1], lines[2]
    assert float(_field(busy, "MessagesPerSec")) > 10
    assert float(_field(busy, "BytesPerSec")) > 100 * float(_field(busy, "MessagesPerSec")) / 2
    assert float(_field(idle, "MessagesPerSec")) == 0.0
    assert float(_field(lines[0], "MessagesPerSec")) == pytest.approx(
        float(_field(busy, "MessagesPerSec")), abs=0.11)
