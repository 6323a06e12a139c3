"""The same pipeline on a Spark standalone cluster: a master and a worker started from
PySpark's own ``bin/spark-class`` (the PyPI wheel has no ``sbin/start-master.sh``), the
job submitted with ``ferry pipeline run --master spark://127.0.0.1:PORT`` against
``kafka://`` on a Ferry broker, with no code change; its executor runs in the worker's own
JVM (its log appears in the worker's directory)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import free_port
from spark_helpers import TEST_JVM_FLAGS

from core.backends import ProducerRecord, open_backend

pytestmark = pytest.mark.slow


def _spark_class(*args: str, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    import pyspark

    home = Path(pyspark.__file__).parent
    with open(log, "wb") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not seen in {log.name}:\n"
                         f"{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    import pyspark

    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent),
           "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_FLAGS}
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master = _spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                          "--port", str(port), "--webui-port", str(free_port()),
                          log=tmp_path / "master.log", env=env)
    procs = [master]
    try:
        _wait_for(tmp_path / "master.log", "I have been elected leader", master, 90)
        work = tmp_path / "work"
        worker = _spark_class("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                              "--cores", "2", "--memory", "1g", "--webui-port",
                              str(free_port()), "--work-dir", str(work), master_url,
                              log=tmp_path / "worker.log", env=env)
        procs.append(worker)
        _wait_for(tmp_path / "worker.log", "Successfully registered with master", worker, 90)
        yield master_url, work
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_pipeline_runs_on_a_standalone_cluster(cluster, log_url, tmp_path):
    import pyarrow.parquet as pq

    master_url, work = cluster
    with open_backend(log_url) as backend:
        backend.create_topic("cluster-in", 2)
        backend.produce("cluster-in", [ProducerRecord(f"k{i}".encode(), f"v{i}".encode())
                                       for i in range(2000)])
    out = tmp_path / "parquet"
    done = subprocess.run(
        [sys.executable, "-m", "core.cli", "pipeline", "run", "topic_to_parquet",
         "--log", log_url, "--master", master_url, "--topic", "cluster-in",
         "--output", str(out), "--strings",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m",
         "--conf", f"spark.driver.extraJavaOptions={TEST_JVM_FLAGS}",
         "--conf", f"spark.executor.extraJavaOptions={TEST_JVM_FLAGS}",
         "--conf", f"spark.pyspark.python={sys.executable}"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    table = pq.read_table(out)
    assert sorted(table.column("value").to_pylist()) == sorted(f"v{i}" for i in range(2000))
    executor_logs = list(work.glob("app-*/*/stderr"))
    assert executor_logs, "no executor ran in the worker"
