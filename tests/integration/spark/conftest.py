"""Fixtures of the Spark suite: one ``local[2]`` SparkSession for the whole run (a JVM
costs ~10 s to start on 2 cores) and one ``ferry broker`` subprocess per module.

The tests skip, naming the cause, only when PySpark or Java is missing; ``tests/run``
installs both, so in CI they run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess

pyspark = pytest.importorskip("pyspark", reason="the ferryman[spark] extra is not installed")

from spark_helpers import session_builder  # noqa: E402

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime (tests/run installs openjdk-17-jre-headless)",
                allow_module_level=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    session = session_builder().getOrCreate()
    from connectors.spark import register

    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def spark_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    directory = tmp_path_factory.mktemp("spark-broker")
    broker = BrokerProcess(directory / "data", {"group.initial.rebalance.delay.ms": "0"},
                           directory / "broker.log")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def log_url(spark_broker: BrokerProcess) -> str:
    return f"kafka://{spark_broker.bootstrap}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.integration)
