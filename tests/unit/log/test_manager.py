"""Tests for the LogManager: topic admin, persistence, recovery, the lock and maintenance."""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import core.log
from core.log.config import TopicConfig, broker_defaults
from core.log.errors import (
    InvalidConfigError,
    InvalidTopicError,
    LogClosedError,
    LogDirLockedError,
    OffsetOutOfRangeError,
    StorageError,
    TopicExistsError,
    UnknownTopicError,
)
from core.log.lock import DataDirLock
from core.log.manager import LogManager
from core.log.records import decode_batch, encode_batch, iter_batches
from core.log.topic_metadata import TOPICS_DIR, ZERO_TOPIC_ID

HOUR_MS = 3_600_000


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def manager(data_dir: Path) -> Iterator[LogManager]:
    mgr = LogManager.open(data_dir, background=False)
    yield mgr
    mgr.close()


def append(mgr: LogManager, topic: str, partition: int, *values: bytes,
           timestamp_ms: int | None = None) -> None:
    # Keyed, as compacted topics refuse records without a key; keys are unique so a
    # compaction pass keeps every record.
    plog = mgr.log(topic, partition)
    for value in values:
        plog.append(encode_batch([(b"key-" + value, value, [], timestamp_ms)]))


def read_values(mgr: LogManager, topic: str, partition: int) -> list[bytes | None]:
    plog = mgr.log(topic, partition)
    result = plog.read(plog.log_start_offset, 10 * 1024 * 1024)
    values = []
    for pos, _ in iter_batches(result.data):
        _, records = decode_batch(result.data, pos)
        values.extend(r.value for r in records)
    return values


# ------------------------------------------------------------------ create / describe


def test_create_list_describe(manager: LogManager) -> None:
    created = manager.create_topic("orders", 3, {"retention.ms": 1000, "cleanup.policy": "compact"})
    manager.create_topic("__consumer_offsets", 2, internal=True)
    assert manager.topics() == ["__consumer_offsets", "orders"]

    meta = manager.topic("orders")
    assert meta == created
    assert meta.name == "orders"
    assert meta.partitions == 3
    assert meta.overrides == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert meta.config.retention_ms == 1000
    assert meta.config.compact and not meta.config.delete
    assert meta.config.segment_bytes == TopicConfig().segment_bytes
    assert len(meta.topic_id) == 22 and meta.topic_id != ZERO_TOPIC_ID
    assert set(meta.topic_id) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert not meta.internal
    assert manager.topic("__consumer_offsets").internal
    assert manager.topic("__consumer_offsets").topic_id != meta.topic_id
    for p in range(3):
        plog = manager.log("orders", p)
        assert (plog.topic, plog.partition) == ("orders", p)
        assert plog.config == meta.config
        assert (manager.data_dir / f"orders-{p}").is_dir()


def test_returned_metadata_is_a_copy(manager: LogManager) -> None:
    meta = manager.create_topic("t", 1, {"retention.ms": "5"})
    meta.overrides["retention.ms"] = "6"
    assert manager.topic("t").overrides == {"retention.ms": "5"}


def test_broker_defaults_apply_under_overrides(data_dir: Path) -> None:
    defaults = broker_defaults({"log.retention.hours": "1", "log.segment.bytes": "4096"})
    with LogManager.open(data_dir, defaults=defaults, background=False) as mgr:
        assert mgr.defaults == defaults
        meta = mgr.create_topic("t", 1, {"segment.bytes": "8192"})
        assert meta.config.retention_ms == HOUR_MS
        assert meta.config.segment_bytes == 8192
        assert meta.overrides == {"segment.bytes": "8192"}


def test_validate_only_creates_nothing(manager: LogManager) -> None:
    meta = manager.create_topic("t", 4, {"retention.ms": "10"}, validate_only=True)
    assert (meta.name, meta.partitions, meta.config.retention_ms) == ("t", 4, 10)
    assert meta.topic_id == ZERO_TOPIC_ID
    assert manager.topics() == []
    assert not (manager.data_dir / TOPICS_DIR / "t.json").exists()
    assert not (manager.data_dir / "t-0").exists()
    with pytest.raises(UnknownTopicError):
        manager.log("t", 0)
    with pytest.raises(InvalidConfigError):
        manager.create_topic("t", 1, {"retention.ms": "soon"}, validate_only=True)
    manager.create_topic("t", 1)
    with pytest.raises(TopicExistsError):
        manager.create_topic("t", 1, validate_only=True)


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a" * 250, "has space", "slash/name", "tab\t", "ümlaut", "a:b"]
)
def test_illegal_topic_names(manager: LogManager, name: str) -> None:
    with pytest.raises(InvalidTopicError):
        manager.create_topic(name, 1)
    assert manager.topics() == []


@pytest.mark.parametrize("name", ["a" * 249, "A-b_c.9", ".hidden", "..x", "-dash", "_"])
def test_legal_topic_names(manager: LogManager, name: str) -> None:
    manager.create_topic(name, 1)
    assert manager.topics() == [name]
    append(manager, name, 0, b"v")
    assert read_values(manager, name, 0) == [b"v"]


@pytest.mark.parametrize("partitions", [0, -1, True, "3", 1.5, None])
def test_illegal_partition_counts(manager: LogManager, partitions: object) -> None:
    with pytest.raises(InvalidTopicError, match="partitions"):
        manager.create_topic("t", partitions)  # type: ignore[arg-type]


def test_config_errors_name_the_key(manager: LogManager) -> None:
    with pytest.raises(InvalidConfigError) as unknown:
        manager.create_topic("t", 1, {"retention.mss": "1"})
    assert unknown.value.key == "retention.mss"
    with pytest.raises(InvalidConfigError) as bad_value:
        manager.create_topic("t", 1, {"cleanup.policy": "shred"})
    assert bad_value.value.key == "cleanup.policy"
    assert "cleanup.policy" in str(bad_value.value)
    assert manager.topics() == []


def test_topic_exists_and_dot_underscore_collision(manager: LogManager) -> None:
    manager.create_topic("a.b", 1)
    with pytest.raises(TopicExistsError, match=r"a\.b"):
        manager.create_topic("a.b", 2)
    with pytest.raises(InvalidTopicError, match="collides"):
        manager.create_topic("a_b", 1)
    assert manager.topic("a.b").partitions == 1


def test_unknown_topic_errors(manager: LogManager) -> None:
    manager.create_topic("t", 2)
    for call in (
        lambda: manager.topic("nope"),
        lambda: manager.delete_topic("nope"),
        lambda: manager.alter_topic_configs("nope", {"retention.ms": "1"}),
        lambda: manager.add_partitions("nope", 3),
        lambda: manager.log("nope", 0),
        lambda: manager.log("t", 2),
        lambda: manager.log("t", -1),
    ):
        with pytest.raises(UnknownTopicError):
            call()


# ------------------------------------------------------------------ alter / partitions


def test_alter_topic_configs_sets_deletes_and_reaches_logs(manager: LogManager) -> None:
    manager.create_topic("t", 2, {"retention.ms": "1000", "segment.bytes": "4096"})
    meta = manager.alter_topic_configs("t", {"retention.bytes": 2048}, ["segment.bytes"])
    assert meta.overrides == {"retention.ms": "1000", "retention.bytes": "2048"}
    assert meta.config.retention_bytes == 2048
    assert meta.config.segment_bytes == TopicConfig().segment_bytes
    assert manager.topic("t") == meta
    for p in range(2):
        assert manager.log("t", p).config == meta.config
    # Deleting a key that is not overridden is not an error, as in Kafka.
    manager.alter_topic_configs("t", {}, ["flush.ms"])


def test_alter_topic_configs_errors(manager: LogManager) -> None:
    manager.create_topic("t", 1, {"retention.ms": "1000"})
    with pytest.raises(InvalidConfigError) as exc:
        manager.alter_topic_configs("t", {"retention.ms": "-2"})
    assert exc.value.key == "retention.ms"
    with pytest.raises(InvalidConfigError) as exc:
        manager.alter_topic_configs("t", {}, ["no.such.config"])
    assert exc.value.key == "no.such.config"
    with pytest.raises(InvalidConfigError):
        manager.alter_topic_configs("t", {"retention.ms": "5"}, ["retention.ms"])
    assert manager.topic("t").overrides == {"retention.ms": "1000"}


def test_add_partitions(manager: LogManager) -> None:
    manager.create_topic("t", 1)
    append(manager, "t", 0, b"kept")
    meta = manager.add_partitions("t", 3)
    assert meta.partitions == 3
    append(manager, "t", 2, b"new")
    assert read_values(manager, "t", 0) == [b"kept"]
    assert read_values(manager, "t", 2) == [b"new"]
    for total in (3, 2, 0):
        with pytest.raises(InvalidTopicError):
            manager.add_partitions("t", total)
    assert manager.topic("t").partitions == 3


# ------------------------------------------------------------------ persistence


def test_everything_survives_close_and_reopen(data_dir: Path) -> None:
    with LogManager.open(data_dir, background=False) as mgr:
        orders = mgr.create_topic("orders", 2, {"retention.ms": "1000"})
        mgr.create_topic("__consumer_offsets", 1, {"cleanup.policy": "compact"}, internal=True)
        mgr.alter_topic_configs("orders", {"segment.bytes": "4096"})
        mgr.add_partitions("orders", 3)
        append(mgr, "orders", 0, b"a", b"b")
        append(mgr, "orders", 2, b"c")
    with LogManager.open(data_dir, background=False) as mgr:
        assert mgr.topics() == ["__consumer_offsets", "orders"]
        meta = mgr.topic("orders")
        assert meta.partitions == 3
        assert meta.topic_id == orders.topic_id
        assert meta.created_ms == orders.created_ms
        assert meta.overrides == {"retention.ms": "1000", "segment.bytes": "4096"}
        assert mgr.log("orders", 0).config == meta.config
        assert mgr.topic("__consumer_offsets").internal
        assert mgr.topic("__consumer_offsets").config.compact
        assert read_values(mgr, "orders", 0) == [b"a", b"b"]
        assert read_values(mgr, "orders", 2) == [b"c"]
        assert mgr.log("orders", 1).log_end_offset == 0


def test_new_broker_defaults_reach_existing_topics_on_reopen(data_dir: Path) -> None:
    with LogManager.open(data_dir, background=False) as mgr:
        mgr.create_topic("t", 1, {"segment.bytes": "4096"})
    defaults = broker_defaults({"log.retention.ms": "1234"})
    with LogManager.open(data_dir, defaults=defaults, background=False) as mgr:
        config = mgr.topic("t").config
        assert (config.retention_ms, config.segment_bytes) == (1234, 4096)


def test_metadata_file_is_kafka_named_json(manager: LogManager) -> None:
    meta = manager.create_topic("t", 2, {"cleanup.policy": "compact,delete"})
    stored = json.loads((manager.data_dir / TOPICS_DIR / "t.json").read_text())
    assert stored["name"] == "t"
    assert stored["partitions"] == 2
    assert stored["overrides"] == {"cleanup.policy": "compact,delete"}
    assert stored["topic_id"] == meta.topic_id
    assert stored["internal"] is False
    assert list((manager.data_dir / TOPICS_DIR).iterdir()) == [
        manager.data_dir / TOPICS_DIR / "t.json"]


def test_unreadable_metadata_fails_open_and_releases_lock(data_dir: Path) -> None:
    with LogManager.open(data_dir, background=False) as mgr:
        mgr.create_topic("t", 1)
    path = data_dir / TOPICS_DIR / "t.json"
    path.write_text("{not json")
    with pytest.raises(StorageError, match=r"t\.json"):
        LogManager.open(data_dir, background=False)
    path.unlink()
    with LogManager.open(data_dir, background=False) as mgr:
        assert mgr.topics() == []


# ------------------------------------------------------------------ delete / recovery


def test_delete_topic_and_recreate_starts_empty(manager: LogManager) -> None:
    first = manager.create_topic("t", 2)
    append(manager, "t", 0, b"old", b"older")
    old_log = manager.log("t", 0)
    manager.delete_topic("t")
    assert manager.topics() == []
    assert not (manager.data_dir / TOPICS_DIR / "t.json").exists()
    deadline = time.monotonic() + 10  # the renamed directories are removed in the background
    while [p for p in manager.data_dir.iterdir() if p.name.startswith("t-")]:
        assert time.monotonic() < deadline, "deleted partition directories were not removed"
        time.sleep(0.01)
    with pytest.raises(UnknownTopicError):
        manager.log("t", 0)
    with pytest.raises(UnknownTopicError):
        manager.delete_topic("t")

    second = manager.create_topic("t", 1)
    assert second.topic_id != first.topic_id
    assert manager.log("t", 0) is not old_log
    assert manager.log("t", 0).log_end_offset == 0
    append(manager, "t", 0, b"new")
    assert read_values(manager, "t", 0) == [b"new"]


def test_recreate_does_not_wait_for_the_old_data_to_be_removed(
        manager: LogManager, monkeypatch: pytest.MonkeyPatch) -> None:
    # Removing a large topic's files is slow; injected here by holding the removal.
    release = threading.Event()
    removed: list[str] = []

    def slow_remove(directories: list[Path]) -> None:
        release.wait(10)
        removed.extend(d.name for d in directories)
        for d in directories:
            shutil.rmtree(d)

    monkeypatch.setattr("core.log.manager._remove_all", slow_remove)
    manager.create_topic("t", 1)
    append(manager, "t", 0, b"old")
    manager.delete_topic("t")
    manager.create_topic("t", 1)
    append(manager, "t", 0, b"new")
    assert read_values(manager, "t", 0) == [b"new"]
    [pending] = [p.name for p in manager.data_dir.iterdir() if p.name.endswith("-delete")]
    release.set()
    manager.close()  # waits for the removal
    assert removed == [pending]
    assert not [p for p in manager.data_dir.iterdir() if p.name.endswith("-delete")]


def test_longest_topic_name_survives_delete_and_strays(manager: LogManager) -> None:
    # NAME-P.<hex>-delete must still fit the 255-byte file name limit.
    name = "x" * 249
    manager.create_topic(name, 1)
    append(manager, name, 0, b"old")
    manager.delete_topic(name)
    (manager.data_dir / f"{name}-0").mkdir()  # a stray left where the new topic goes
    manager.create_topic(name, 1)
    assert manager.log(name, 0).log_end_offset == 0
    assert any(p.name.endswith("-stray") for p in manager.data_dir.iterdir())


def test_deleted_topic_stays_deleted_after_reopen(data_dir: Path) -> None:
    with LogManager.open(data_dir, background=False) as mgr:
        mgr.create_topic("gone", 1)
        mgr.create_topic("kept", 1)
        append(mgr, "kept", 0, b"x")
        mgr.delete_topic("gone")
    with LogManager.open(data_dir, background=False) as mgr:
        assert mgr.topics() == ["kept"]
        assert read_values(mgr, "kept", 0) == [b"x"]


def test_open_cleans_leftovers_and_leaves_strays_alone(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with LogManager.open(data_dir, background=False) as mgr:
        mgr.create_topic("t", 1)
    deleted = data_dir / "old-0.0123abcd-delete"
    deleted.mkdir()
    (deleted / "00000000000000000000.log").write_bytes(b"junk")
    tmp = data_dir / TOPICS_DIR / "half.json.tmp"
    tmp.write_text("{")
    stray = data_dir / "stray-0"
    stray.mkdir()
    (stray / "keep.me").write_text("data")
    with caplog.at_level(logging.WARNING, logger="core.log.partition_dirs"):
        mgr = LogManager.open(data_dir, background=False)
    try:
        assert not deleted.exists()
        assert not tmp.exists()
        assert (stray / "keep.me").read_text() == "data"
        assert any("stray-0" in r.getMessage() for r in caplog.records)
        assert mgr.topics() == ["t"]
        # Creating a topic over a stray directory sets it aside instead of adopting it.
        mgr.create_topic("stray", 1)
        assert mgr.log("stray", 0).log_end_offset == 0
        assert not (data_dir / "stray-0" / "keep.me").exists()
        kept = [p for p in data_dir.iterdir() if p.name.startswith("stray-0.")]
        assert len(kept) == 1 and (kept[0] / "keep.me").read_text() == "data"
    finally:
        mgr.close()


def test_missing_partition_directory_is_recreated(data_dir: Path) -> None:
    with LogManager.open(data_dir, background=False) as mgr:
        mgr.create_topic("t", 2)
    for path in (data_dir / "t-1").iterdir():
        path.unlink()
    (data_dir / "t-1").rmdir()
    with LogManager.open(data_dir, background=False) as mgr:
        assert mgr.log("t", 1).log_end_offset == 0
        assert (data_dir / "t-1").is_dir()


# ------------------------------------------------------------------ lifecycle and lock


def test_close_is_idempotent_and_refuses_later_calls(data_dir: Path) -> None:
    mgr = LogManager.open(data_dir, background=True)
    mgr.create_topic("t", 1)
    mgr.close()
    mgr.close()
    for call in (
        mgr.topics,
        lambda: mgr.topic("t"),
        lambda: mgr.log("t", 0),
        lambda: mgr.create_topic("u", 1),
        mgr.run_maintenance,
        mgr.flush,
    ):
        with pytest.raises(LogClosedError):
            call()
    DataDirLock.acquire(data_dir).release()  # the lock was released


def test_same_process_double_open_is_refused(manager: LogManager) -> None:
    with pytest.raises(LogDirLockedError, match="already open in this process"):
        LogManager.open(manager.data_dir, background=False)


def test_unusable_data_dir_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="not a directory"):
        LogManager.open(tmp_path / "file", background=False)


_HOLDER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from core.log.manager import LogManager
    mgr = LogManager.open(sys.argv[1], owner=json.loads(sys.argv[2]), background=True)
    mgr.create_topic("held", 1)
    print("open", flush=True)
    sys.stdin.read()
    mgr.close()
    """
)


def test_other_process_holds_the_directory_until_killed(data_dir: Path) -> None:
    owner = {"command": "ferry broker", "listener": "127.0.0.1:19092"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER_SCRIPT, str(data_dir), json.dumps(owner)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "open", f"holder failed (exit {proc.poll()})"
        with pytest.raises(LogDirLockedError) as info:
            LogManager.open(data_dir, background=False)
        message = str(info.value)
        assert f"process {proc.pid}" in message
        assert "ferry broker" in message
        assert "use --log kafka://127.0.0.1:19092" in message
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            mgr = LogManager.open(data_dir, background=False)
            break
        except LogDirLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    with mgr:
        assert mgr.topics() == ["held"]


# ------------------------------------------------------------------ maintenance


def _expired_segments_setup(mgr: LogManager, *, policy: str = "delete") -> None:
    # Tiny segments so every batch rolls; records an hour old against a one-minute retention.
    mgr.create_topic("t", 1, {"segment.bytes": "100", "retention.ms": "60000",
                              "cleanup.policy": policy, "file.delete.delay.ms": "0"})
    old = int(time.time() * 1000) - HOUR_MS
    append(mgr, "t", 0, b"one", b"two", b"three", timestamp_ms=old)


def test_background_thread_deletes_expired_segments(data_dir: Path) -> None:
    mgr = LogManager.open(data_dir, background=True, retention_check_interval_ms=20,
                          cleaner_backoff_ms=20)
    try:
        _expired_segments_setup(mgr)
        plog = mgr.log("t", 0)
        deadline = time.monotonic() + 10
        while plog.log_start_offset == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert plog.log_start_offset > 0
        with pytest.raises(OffsetOutOfRangeError):
            plog.read(0, 1024)
    finally:
        mgr.close()


def test_run_maintenance_uses_the_injected_clock(data_dir: Path) -> None:
    now = [time.time()]
    with LogManager.open(data_dir, background=False, clock=lambda: now[0]) as mgr:
        mgr.create_topic("t", 1, {"segment.bytes": "100", "retention.ms": "60000"})
        append(mgr, "t", 0, b"one", b"two", timestamp_ms=int(now[0] * 1000))
        plog = mgr.log("t", 0)
        mgr.run_maintenance()
        assert plog.log_start_offset == 0
        now[0] += 2 * HOUR_MS / 1000
        mgr.run_maintenance()
        assert plog.log_start_offset > 0


def test_retention_skips_compact_only_topics(manager: LogManager) -> None:
    _expired_segments_setup(manager, policy="compact")
    manager.run_maintenance()
    assert manager.log("t", 0).log_start_offset == 0
    assert read_values(manager, "t", 0) == [b"one", b"two", b"three"]


# ------------------------------------------------------------------ threads and exports


def test_concurrent_admin_and_lookups(manager: LogManager) -> None:
    errors: list[BaseException] = []

    def churn(worker: int) -> None:
        try:
            for i in range(10):
                name = f"w{worker}-{i}"
                manager.create_topic(name, 2)
                append(manager, name, 1, b"x")
                assert manager.log(name, 1).log_end_offset == 1
                if i % 2:
                    manager.delete_topic(name)
        except BaseException as exc:  # reported to the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert manager.topics() == sorted(f"w{w}-{i}" for w in range(4) for i in range(0, 10, 2))


def test_package_exports() -> None:
    assert sorted(core.log.__all__) == sorted([
        "AppendInfo", "CorruptRecordError", "InvalidConfigError", "InvalidRecordError",
        "InvalidTopicError", "LogClosedError", "LogDirLockedError", "LogDirOfflineError",
        "LogManager",
        "OffsetOutOfRangeError", "PartitionLog", "ReadResult", "RecordTooLargeError",
        "StorageError", "TopicConfig", "TopicExistsError", "TopicMetadata", "UnknownTopicError",
    ])
    for name in core.log.__all__:
        assert getattr(core.log, name) is not None
    assert core.log.LogManager is LogManager
