"""The example plugin distribution: its connector and transform, and its entry points
once pip-installed."""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from conn_fakes import FakeOffsetStore, FakeSourceTaskContext

from connect.api import DataError, Schema, SinkRecord, SourceRecord

PLUGIN_DIR = Path(__file__).resolve().parents[3] / "plugins" / "ferry-example-plugin"


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The plugin package imported from its source folder, without installing it."""
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    return importlib.import_module("ferry_example_plugin")


def test_counter_counts_and_resumes_after_its_stored_offset(plugin: ModuleType) -> None:
    props = {"topic": "counts", "interval.ms": "0"}
    connector = plugin.CounterSourceConnector()
    connector.start(props)
    assert connector.task_configs(4) == [props]
    store = FakeOffsetStore()
    task = plugin.CounterSourceTask()
    task.initialize(FakeSourceTaskContext(props, store))
    task.start(props)
    records: list[SourceRecord] = [r for _ in range(3) for r in task.poll() or []]
    assert [r.value for r in records] == ["count-0", "count-1", "count-2"]
    assert records[-1].source_partition == {"counter": "counts"}
    store.commit(records[:2])
    task.stop()
    assert task.poll() is None

    restarted = plugin.CounterSourceTask()
    restarted.initialize(FakeSourceTaskContext(props, store))
    restarted.start(props)
    assert [r.value for r in restarted.poll() or []] == ["count-2"]


def test_uppercase_value(plugin: ModuleType) -> None:
    transform = plugin.UppercaseValue()
    transform.configure({})
    record = SinkRecord(
        topic="t", kafka_partition=0, kafka_offset=0, value_schema=Schema.STRING_SCHEMA, value="hi"
    )
    assert transform.apply(record).value == "HI"
    tombstone = record.new_record(value=None)
    assert transform.apply(tombstone) is tombstone
    with pytest.raises(DataError, match="string values only"):
        transform.apply(record.new_record(value=3))


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def installed_plugin() -> Iterator[None]:
    # --no-deps: ferryman is the distribution under test, already installed.
    result = _pip("install", "--no-deps", "-e", str(PLUGIN_DIR))
    assert result.returncode == 0, result.stdout + result.stderr
    importlib.invalidate_caches()
    try:
        yield
    finally:
        result = _pip("uninstall", "-y", "ferry-example-plugin")
        importlib.invalidate_caches()
        shutil.rmtree(PLUGIN_DIR / "ferry_example_plugin.egg-info", ignore_errors=True)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.integration
def test_installed_plugin_registers_its_entry_points(installed_plugin: None) -> None:
    # A fresh interpreter, as a worker would start, sees the new distribution.
    script = (
        "import importlib.metadata as m\n"
        "for group in ('ferry.connectors', 'ferry.transforms'):\n"
        "    for ep in m.entry_points(group=group):\n"
        "        if ep.dist.name == 'ferry-example-plugin':\n"
        "            print(group, ep.name, ep.load().__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ferry.connectors CounterSource CounterSourceConnector",
        "ferry.transforms UppercaseValue UppercaseValue",
    ]
    assert importlib.metadata.version("ferry-example-plugin") == "0.1.0"
