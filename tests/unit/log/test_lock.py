"""Tests for the data-directory lock (core.log.lock)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.log.errors import LogDirLockedError, StorageError
from core.log.lock import LOCK_FILE_NAME, DataDirLock, describe_holder, read_holder

# A child that takes the lock, says so on stdout, then waits until its stdin closes.
_HOLDER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from core.log.lock import DataDirLock
    lock = DataDirLock.acquire(sys.argv[1], json.loads(sys.argv[2]))
    print("locked", flush=True)
    sys.stdin.read()
    lock.release()
    """
)


@pytest.fixture
def holder_process(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A subprocess holding the lock on ``tmp_path / "data"`` as a broker would."""
    owner = {"command": "ferry broker", "listener": "127.0.0.1:19092"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER_SCRIPT, str(tmp_path / "data"), json.dumps(owner)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        # readline() returns once the child printed, or at EOF if it died; the timeout on
        # wait() below bounds the test if it hangs before either.
        line = proc.stdout.readline()
        assert line.strip() == "locked", f"holder did not take the lock (exit {proc.poll()})"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _acquire_eventually(data_dir: Path, deadline_s: float = 10.0) -> DataDirLock:
    """Acquire, retrying while the previous holder is still being torn down by the kernel."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return DataDirLock.acquire(data_dir)
        except LogDirLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def test_acquire_creates_directory_and_records_holder(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"
    owner = {"command": "ferry up", "listener": "127.0.0.1:9092"}
    with DataDirLock.acquire(data_dir, owner) as lock:
        assert data_dir.is_dir()
        assert lock.held
        record = read_holder(data_dir)
        assert record["pid"] == os.getpid()
        assert record["command"] == "ferry up"
        assert record["listener"] == "127.0.0.1:9092"
        assert "command_line" in record
        assert isinstance(record["started_ms"], int)
    assert not lock.held
    assert read_holder(data_dir) == {}


def test_release_is_idempotent_and_allows_reacquire(tmp_path: Path) -> None:
    lock = DataDirLock.acquire(tmp_path)
    lock.release()
    lock.release()
    again = DataDirLock.acquire(tmp_path)
    again.release()


def test_same_process_double_acquire_is_refused(tmp_path: Path) -> None:
    with DataDirLock.acquire(tmp_path / "d"):
        with pytest.raises(LogDirLockedError, match="already open in this process"):
            DataDirLock.acquire(tmp_path / "d")
        # The same directory through another spelling of its path is the same directory.
        with pytest.raises(LogDirLockedError):
            DataDirLock.acquire(tmp_path / "d" / ".." / "d")


def test_same_process_double_acquire_through_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    with DataDirLock.acquire(tmp_path / "real"), pytest.raises(LogDirLockedError):
        DataDirLock.acquire(tmp_path / "alias")


def test_other_process_holding_lock_is_named(
    tmp_path: Path, holder_process: subprocess.Popen[str]
) -> None:
    data_dir = tmp_path / "data"
    with pytest.raises(LogDirLockedError) as info:
        DataDirLock.acquire(data_dir)
    message = str(info.value)
    assert f"process {holder_process.pid}" in message
    assert "ferry broker" in message
    assert "--log kafka://127.0.0.1:19092" in message
    assert str(data_dir) in message
    assert info.value.holder["pid"] == holder_process.pid


def test_lock_is_free_after_holder_exits_cleanly(
    tmp_path: Path, holder_process: subprocess.Popen[str]
) -> None:
    assert holder_process.stdin is not None
    holder_process.stdin.close()
    assert holder_process.wait(timeout=10) == 0
    _acquire_eventually(tmp_path / "data").release()


def test_stale_lock_file_from_killed_process_does_not_block(
    tmp_path: Path, holder_process: subprocess.Popen[str]
) -> None:
    data_dir = tmp_path / "data"
    holder_process.send_signal(signal.SIGKILL)
    holder_process.wait(timeout=10)
    # The killed holder's record is still in the file; it must not matter.
    assert read_holder(data_dir)["pid"] == holder_process.pid
    lock = _acquire_eventually(data_dir)
    try:
        assert read_holder(data_dir)["pid"] == os.getpid()
    finally:
        lock.release()


def test_garbage_in_lock_file_does_not_block(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE_NAME).write_bytes(b"\x00not json{")
    assert read_holder(tmp_path) == {}
    DataDirLock.acquire(tmp_path).release()


def test_data_dir_that_is_a_file_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(StorageError, match="not a directory"):
        DataDirLock.acquire(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_data_dir_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "ro"
    path.mkdir()
    path.chmod(0o500)
    try:
        with pytest.raises(StorageError, match="not writable"):
            DataDirLock.acquire(path)
    finally:
        path.chmod(0o700)


def test_describe_holder_without_listener_suggests_stopping_it() -> None:
    message = describe_holder("./ferry-data", {"pid": 4242, "command": "ferry up"})
    assert message == (
        "data directory ./ferry-data is in use by process 4242 (ferry up); "
        "stop that process or use another data directory"
    )


def test_describe_holder_for_a_broker_suggests_kafka_url() -> None:
    holder = {"pid": 4242, "command": "ferry broker", "listener": "127.0.0.1:9092"}
    assert describe_holder("./ferry-data", holder) == (
        "data directory ./ferry-data is in use by process 4242 (ferry broker, listening on "
        "127.0.0.1:9092); use --log kafka://127.0.0.1:9092 to reach it through the broker"
    )


def test_describe_holder_with_unreadable_record() -> None:
    assert "in use by another process" in describe_holder("d", {})
