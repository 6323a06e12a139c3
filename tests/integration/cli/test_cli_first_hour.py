"""What a new user meets in the first hour: broker settings for ``ferry up``, topics created
on first use, logging options, a dead ``kafka://`` address, a mistyped data directory, and
every bad flag answered in one line."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from broker_process import BrokerProcess, free_port
from cli_helpers import Ferry, LineReader, assert_one_error_line, stop
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from core.backends import open_backend
from core.backends.errors import BackendUnavailableError

pytestmark = pytest.mark.integration


def _start_up(ferry: Ferry, *flags: str) -> tuple[subprocess.Popen[bytes], LineReader, str]:
    """``ferry up`` with the broker only; returns the process, its log and the ready line."""
    proc = ferry.start("up", "--data-dir", str(ferry.data_dir), "--no-connect",
                       "--no-registry", *flags, log=False)
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    return proc, log, log.wait_for(b"ferry up ready:").decode()


def _produce(bootstrap: str, topic: str, timeout_ms: int = 10000) -> None:
    """One record through librdkafka; raises KafkaException if it is not delivered."""
    errors: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": timeout_ms})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(timeout_ms / 1000 + 10) == 0
    if errors:
        raise KafkaException(errors[0])


def _partitions(bootstrap: str, topic: str) -> int:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return len(metadata.topics[topic].partitions)


# ------------------------------------------------------------------ ferry up's broker


def test_up_creates_topics_on_first_use_with_settings_from_file_and_overrides(
        ferry: Ferry) -> None:
    port = free_port()
    config = ferry.tmp_path / "server.properties"
    config.write_text(f"listeners=PLAINTEXT://127.0.0.1:{port}\nnum.partitions=2\n"
                      f"advertised.listeners=PLAINTEXT://localhost:{port}\n"
                      "log.retention.hours=24\n")
    proc, log, ready = _start_up(ferry, "--broker-config", str(config),
                                 "-o", "num.partitions=3")
    # listeners and advertised.listeners from the file
    assert f"broker 127.0.0.1:{port} (advertised as localhost:{port})," in ready, ready
    bootstrap = f"127.0.0.1:{port}"
    _produce(bootstrap, "orders")  # no topic yet: created as Kafka's default does
    assert _partitions(bootstrap, "orders") == 3  # the override wins over the file
    assert stop(proc, signal.SIGTERM) == 0
    assert b"Traceback" not in log.rest()
    described = ferry.ok("topics", "describe", "orders").decode()
    assert "PartitionCount: 3" in described


def test_up_does_not_create_topics_when_told_not_to_and_logs_json(ferry: Ferry) -> None:
    port = free_port()
    proc, log, ready = _start_up(ferry, "--listen", f"127.0.0.1:{port}", "--log-format",
                                 "json", "--override", "auto.create.topics.enable=false")
    summary = json.loads(ready)
    assert summary["level"] == "INFO" and summary["logger"] == "core.cli.up"
    assert "logs stderr (INFO, json)" in summary["message"], summary
    with pytest.raises(KafkaException, match=r"UNKNOWN_TOPIC|Unknown topic|MSG_TIMED_OUT"):
        _produce(f"127.0.0.1:{port}", "typo", timeout_ms=3000)
    assert stop(proc, signal.SIGTERM) == 0
    lines = [*log.seen, *log.rest().splitlines()]
    assert len(lines) > 3 and all(isinstance(json.loads(line), dict) for line in lines)
    assert b"typo" not in ferry.ok("topics", "list")


def test_broker_keeps_auto_create_off_unless_configured(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {}, tmp_path / "broker.log")
    (tmp_path / "data").mkdir()
    broker.start()
    try:
        with pytest.raises(KafkaException, match=r"UNKNOWN_TOPIC|Unknown topic|MSG_TIMED_OUT"):
            _produce(broker.bootstrap, "typo", timeout_ms=3000)
    finally:
        assert broker.stop() == 0


@pytest.mark.parametrize(("flags", "fragments"), [
    (["-o", "num.partitions"], ["--override", "KEY=VALUE"]),
    (["-o", "num.partitions=zero"], ["--override", "num.partitions"]),
    (["-o", "auto.create.topics.enable=maybe"], ["auto.create.topics.enable"]),
    (["--broker-config", "missing.properties"], ["missing.properties"]),
    (["--listen", "nowhere"], ["nowhere"]),
    (["--listen", "0.0.0.0:9092"], ["0.0.0.0:9092", "--advertised-listener"]),
    (["--advertised-listener", "x:y"], ["x:y"]),
])
def test_up_rejects_bad_broker_settings_in_one_line(ferry: Ferry, flags: list[str],
                                                    fragments: list[str]) -> None:
    result = ferry.run("up", "--data-dir", str(ferry.data_dir), *flags, log=False)
    assert_one_error_line(result, *fragments)
    assert not ferry.data_dir.exists(), "nothing is opened before the flags are checked"


def test_up_names_the_bad_key_of_its_broker_config_file(ferry: Ferry) -> None:
    config = ferry.tmp_path / "server.properties"
    config.write_text("log.segment.bytes=tiny\n")
    result = ferry.run("up", "--data-dir", str(ferry.data_dir), "--broker-config", str(config),
                       log=False)
    assert_one_error_line(result, str(config), "log.segment.bytes")


def test_broker_rejects_a_bad_override_in_one_line(ferry: Ferry) -> None:
    result = ferry.run("broker", "--data-dir", str(ferry.data_dir), "-o", "num.io.threads=0",
                       log=False)
    assert_one_error_line(result, "--override", "num.io.threads")


# ------------------------------------------------------------------ logging


def test_json_log_format_and_level_from_flags_or_environment(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "t")
    for args, env in ((("--log-level", "info", "--log-format", "json"), {}),
                      ((), {"FERRY_LOG_LEVEL": "INFO", "FERRY_LOG_FORMAT": "json"})):
        result = ferry.run(*args, "topics", "list", env=env)
        assert result.returncode == 0, result.stderr
        lines = result.stderr.decode().splitlines()
        assert lines, "INFO shows the log being opened"
        entries = [json.loads(line) for line in lines]  # every line is one JSON object
        assert all({"time", "level", "logger", "message"} <= set(e) for e in entries)
        assert any(e["level"] == "INFO" and "opened" in e["message"] for e in entries)
        assert result.stdout.split() == [b"__consumer_offsets", b"t"]
    # The default for a console tool: warnings only, so this prints nothing on stderr.
    quiet = ferry.run("topics", "list")
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_log_options_after_the_subcommand(ferry: Ferry) -> None:
    ferry.ok("topics", "create", "t")
    result = ferry.run("topics", "list", "--log-level", "debug")
    assert result.returncode == 0 and b"DEBUG" in result.stderr


@pytest.mark.parametrize("flag", ["--log-level", "--log-format"])
def test_bad_log_flags_are_usage_errors(ferry: Ferry, flag: str) -> None:
    result = ferry.run(flag, "loud", "topics", "list")
    stderr = result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in stderr, stderr
    assert f"argument {flag}: invalid" in stderr.splitlines()[-1], stderr


@pytest.mark.parametrize("var", ["FERRY_LOG_LEVEL", "FERRY_LOG_FORMAT"])
def test_bad_log_environment_is_one_line(ferry: Ferry, var: str) -> None:
    result = ferry.run("topics", "list", env={var: "loud"})
    assert_one_error_line(result, var, "loud")


# ------------------------------------------------------------------ kafka:// nowhere


@pytest.mark.parametrize("command", [
    ("topics", "list"),
    ("topics", "create", "t"),
    ("consume", "t", "--max-messages", "1"),
    ("produce", "t"),
    ("groups", "list"),
])
def test_console_tools_fail_at_once_when_nothing_listens(ferry: Ferry,
                                                         command: tuple[str, ...]) -> None:
    address = f"127.0.0.1:{free_port()}"
    # The timeout is far below default.api.timeout.ms (60 s) that a retry loop would spend.
    result = ferry.run("--log", f"kafka://{address}", *command, log=False, input=b"v\n",
                       timeout=20)
    assert_one_error_line(result, address, "connection refused")


def test_a_waiting_call_says_what_it_waits_for(caplog: pytest.LogCaptureFixture) -> None:
    address = f"127.0.0.1:{free_port()}"
    caplog.set_level(logging.WARNING, logger="core.backends.kafka")
    with (open_backend(f"kafka://{address}", {"default.api.timeout.ms": "3500"}) as backend,
          pytest.raises(BackendUnavailableError, match="gave up")):
        backend.list_topics()
    waits = [r.getMessage() for r in caplog.records if "waiting for a Kafka broker" in
             r.getMessage()]
    assert len(waits) == 1 and address in waits[0], waits  # once per call, naming it


def test_fail_fast_only_until_a_broker_was_reached(tmp_path: Path) -> None:
    """A broker that restarts under a console tool is waited for, not given up on."""
    (tmp_path / "data").mkdir()
    broker = BrokerProcess(tmp_path / "data", {}, tmp_path / "broker.log")
    broker.start()
    config = {"ferry.fail.fast.on.refused": "true", "default.api.timeout.ms": "2500"}
    with open_backend(f"kafka://{broker.bootstrap}", config) as backend:
        backend.list_topics()
        broker.stop()
        with pytest.raises(BackendUnavailableError, match="gave up"):
            backend.list_topics()


def test_a_topic_that_exists_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    broker = BrokerProcess(tmp_path / "data", {}, tmp_path / "broker.log")
    broker.start()
    try:
        runner = Ferry(tmp_path)
        runner.log_url = f"kafka://{broker.bootstrap}"
        runner.ok("topics", "create", "t")
        line = assert_one_error_line(runner.run("topics", "create", "t"), "'t'")
        assert line.lower().count("already exists") == 1, line
    finally:
        broker.stop()


# ------------------------------------------------------------------ embedded: mistyped


@pytest.mark.parametrize("command", [
    ("topics", "list"),
    ("topics", "describe"),
    ("topics", "delete", "t"),
    ("consume", "t", "--max-messages", "1"),
    ("produce", "t"),
    ("groups", "list"),
    ("groups", "describe", "g"),
])
def test_commands_that_read_need_an_existing_data_directory(
        ferry: Ferry, command: tuple[str, ...]) -> None:
    typo = ferry.tmp_path / "typo" / "path"
    result = ferry.run("--log", f"embedded:{typo}", *command, log=False, input=b"v\n")
    assert_one_error_line(result, str(typo))
    assert not (ferry.tmp_path / "typo").exists()
    empty = ferry.tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    result = ferry.run("--log", f"embedded:{empty}", *command, log=False, input=b"v\n")
    assert_one_error_line(result, "not a Ferry data directory")
    assert list(empty.iterdir()) == []


def test_topics_create_still_creates_the_data_directory(ferry: Ferry) -> None:
    assert not ferry.data_dir.exists()
    ferry.ok("topics", "create", "t")
    assert ferry.ok("topics", "list", "--exclude-internal") == b"t\n"


# ------------------------------------------------------------------ small things


def test_connect_standalone_needs_only_the_worker_config(ferry: Ferry) -> None:
    result = ferry.run("connect", "standalone", log=False)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "required: WORKER_CONFIG" in stderr and "CONNECTOR_CONFIG" not in \
        stderr.splitlines()[-1], stderr


def test_module_entry_point_exits_cleanly_on_bad_input() -> None:
    result = subprocess.run([sys.executable, "-m", "core.cli", "--log-level"],
                            capture_output=True, timeout=30, check=False)
    assert result.returncode == 2 and b"Traceback" not in result.stderr


@pytest.mark.parametrize(("worker_config", "expected_ms"), [(None, 1000), ("5000", 5000)])
def test_up_connect_worker_flushes_sinks_every_second_unless_configured(
        tmp_path: Path, worker_config: str | None, expected_ms: int) -> None:
    """The worker ``ferry up`` really starts (on an embedded log) flushes sinks and commits
    every second, so the README's sink output shows up at once; a worker config wins."""
    import argparse

    from connect.cli import UP_SERVICE

    config_path = None
    if worker_config is not None:
        config_path = tmp_path / "worker.properties"
        config_path.write_text(f"offset.flush.interval.ms={worker_config}\n")
    args = argparse.Namespace(no_connect=False, connect_rest="127.0.0.1:0",
                              connect_config=str(config_path) if config_path else None)
    data_dir = tmp_path / "data"
    worker = UP_SERVICE.start(args, f"embedded:{data_dir}", str(data_dir))
    try:
        assert worker.herder.worker.config.offset_flush_interval_ms == expected_ms
    finally:
        worker.stop()
