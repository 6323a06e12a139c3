"""FileRaftStorage: term, vote and log survive a reopen; a torn or corrupt tail (a crash in
the middle of an append) is cut; a failed write leaves the log at a record boundary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.cluster.raft import Entry, FileRaftStorage
from core.cluster.raft.storage import RaftStorageError


def _entries(term: int, *payloads: bytes) -> list[Entry]:
    return [Entry(term, p) for p in payloads]


def test_state_and_log_survive_a_reopen(tmp_path: Path):
    storage = FileRaftStorage(tmp_path)
    assert storage.load_state() == (0, None) and storage.last_index() == 0
    storage.save_state(3, 2)
    storage.append(_entries(1, b"", b"a", b"b"))
    storage.append(_entries(3, b"c"))
    storage.close()
    again = FileRaftStorage(tmp_path)
    assert again.load_state() == (3, 2)
    assert again.last_index() == 4
    assert again.entries(1, 5) == _entries(1, b"", b"a", b"b") + _entries(3, b"c")
    assert [again.term_at(i) for i in range(5)] == [0, 1, 1, 1, 3]
    again.close()


def test_truncation_is_durable_and_appends_continue_after_it(tmp_path: Path):
    storage = FileRaftStorage(tmp_path)
    storage.append(_entries(1, b"a", b"b", b"c"))
    storage.truncate_from(2)
    storage.append(_entries(2, b"x"))
    storage.close()
    again = FileRaftStorage(tmp_path)
    assert again.entries(1, 10) == [Entry(1, b"a"), Entry(2, b"x")]
    again.close()


@pytest.mark.parametrize("cut", [1, 5, 17])
def test_a_torn_tail_is_cut_on_open(tmp_path: Path, cut: int):
    storage = FileRaftStorage(tmp_path)
    storage.append(_entries(1, b"kept", b"torn-away-record"))
    storage.close()
    path = tmp_path / "raft.log"
    path.write_bytes(path.read_bytes()[:-cut])  # a crash in the middle of the second append
    again = FileRaftStorage(tmp_path)
    assert again.entries(1, 10) == [Entry(1, b"kept")]
    again.append(_entries(2, b"next"))
    again.close()
    assert FileRaftStorage(tmp_path).entries(1, 10) == [Entry(1, b"kept"), Entry(2, b"next")]


def test_a_corrupt_record_ends_the_log(tmp_path: Path):
    storage = FileRaftStorage(tmp_path)
    storage.append(_entries(1, b"first", b"second", b"third"))
    storage.close()
    path = tmp_path / "raft.log"
    data = bytearray(path.read_bytes())
    data[data.index(b"second")] ^= 0xFF
    path.write_bytes(bytes(data))
    again = FileRaftStorage(tmp_path)
    assert again.entries(1, 10) == [Entry(1, b"first")]
    again.close()


def test_one_process_per_metadata_directory(tmp_path: Path):
    first = FileRaftStorage(tmp_path)
    with pytest.raises(RaftStorageError, match="in use by another process"):
        FileRaftStorage(tmp_path)  # flock is per open file: a second open is refused too
    first.close()
    FileRaftStorage(tmp_path).close()


def test_an_unreadable_quorum_state_is_a_clear_error(tmp_path: Path):
    (tmp_path / "quorum-state").write_text("{not json")
    with pytest.raises(RaftStorageError, match="vote is unknown"):
        FileRaftStorage(tmp_path)


def test_a_failed_append_leaves_the_log_at_a_record_boundary(tmp_path: Path, monkeypatch):
    """Disk full mid-append, injected as the OSError the kernel gives (ENOSPC) after part
    of the records reached the file: the log still opens with what came before."""
    storage = FileRaftStorage(tmp_path)
    storage.append(_entries(1, b"before"))
    real_write = storage._file.write

    def write_half_then_fail(data):
        real_write(bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage._file, "write", write_half_then_fail, raising=False)
    with pytest.raises(OSError):
        storage.append(_entries(1, b"lost-" * 20))
    monkeypatch.undo()
    assert storage.last_index() == 1
    storage.append(_entries(1, b"after"))
    storage.close()
    assert FileRaftStorage(tmp_path).entries(1, 10) == [Entry(1, b"before"), Entry(1, b"after")]


def test_the_state_file_is_replaced_atomically(tmp_path: Path):
    storage = FileRaftStorage(tmp_path)
    storage.save_state(1, 1)
    storage.save_state(2, None)
    assert sorted(os.listdir(tmp_path)) == [".lock", "quorum-state", "raft.log"]
    storage.close()
    assert FileRaftStorage(tmp_path).load_state() == (2, None)
