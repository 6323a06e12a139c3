"""Idempotent producers: duplicates, sequence and epoch errors, rebuild from the log, ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.broker.config import BrokerConfigError
from core.broker.meta import load_or_create_meta
from core.broker.producer_state import (
    ProducerIdAllocator,
    ProducerStateError,
    ProducerStateManager,
)
from core.log.config import TopicConfig
from core.log.log import PartitionLog
from core.log.records import encode_batch, parse_header
from core.protocol.errors import ErrorCode

PID = 1000


def batch(first_seq: int, count: int = 2, *, pid: int = PID, epoch: int = 0) -> bytearray:
    records = [(b"k%d" % i, b"v%d" % (first_seq + i), [], 1_700_000_000_000 + i)
               for i in range(count)]
    return encode_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=first_seq)


class Partition:
    """A PartitionLog and a ProducerStateManager appending to it."""

    def __init__(self, tmp_path: Path, config: TopicConfig | None = None) -> None:
        self.tmp_path = tmp_path
        self.config = config or TopicConfig()
        self.log = PartitionLog.open(tmp_path / "t-0", "t", 0, self.config)
        self.producers = ProducerStateManager(tmp_path)

    def append(self, buf: bytearray):
        return self.producers.append(self.log, parse_header(buf), buf)

    def reopen(self) -> None:
        self.log.close()
        self.log = PartitionLog.open(self.tmp_path / "t-0", "t", 0, self.config)
        self.producers = ProducerStateManager(self.tmp_path)

    def error(self, buf: bytearray) -> ErrorCode:
        with pytest.raises(ProducerStateError) as info:
            self.append(buf)
        return info.value.error_code


@pytest.fixture
def part(tmp_path: Path):
    p = Partition(tmp_path)
    yield p
    p.log.close()


def test_in_sequence_batches_are_appended(part: Partition) -> None:
    assert part.append(batch(0)).base_offset == 0
    assert part.append(batch(2)).base_offset == 2
    assert part.log.log_end_offset == 4


def test_a_retried_batch_gets_its_original_offsets_and_is_not_stored_twice(
        part: Partition) -> None:
    first = part.append(batch(0))
    part.append(batch(2))
    part.append(batch(4))
    retry = part.append(batch(2))
    assert (retry.base_offset, retry.last_offset) == (2, 3)
    assert part.append(batch(0)) == first
    assert part.log.log_end_offset == 6


def test_only_the_last_five_batches_are_remembered(part: Partition) -> None:
    for seq in range(0, 12, 2):
        part.append(batch(seq))  # six batches: 0 is forgotten
    assert part.append(batch(2)).base_offset == 2
    assert part.error(batch(0)) == ErrorCode.DUPLICATE_SEQUENCE_NUMBER
    assert part.log.log_end_offset == 12


def test_a_gap_is_out_of_order(part: Partition) -> None:
    part.append(batch(0))
    assert part.error(batch(5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert part.log.log_end_offset == 2


def test_epochs_fence_and_restart_sequences(part: Partition) -> None:
    part.append(batch(0, epoch=1))
    assert part.error(batch(2, epoch=0)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert part.error(batch(2, epoch=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert part.append(batch(0, epoch=2)).base_offset == 2
    assert part.error(batch(2, epoch=1)) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_an_unknown_producer_is_accepted_at_any_sequence(part: Partition) -> None:
    assert part.append(batch(57, pid=7)).base_offset == 0
    assert part.error(batch(60, pid=7)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert part.append(batch(59, pid=7)).base_offset == 2


def test_sequences_wrap_after_int32_max(part: Partition) -> None:
    top = 2**31 - 2
    part.append(batch(top, count=2))  # sequences 2147483646 and 2147483647
    assert part.append(batch(0, count=3)).base_offset == 2
    assert part.append(batch(top, count=2)).base_offset == 0  # still a remembered retry


def test_a_batch_without_sequence_is_invalid(part: Partition) -> None:
    assert part.error(batch(-1)) == ErrorCode.INVALID_RECORD


def test_state_is_rebuilt_from_batch_headers_after_a_restart(part: Partition) -> None:
    part.append(batch(0))
    part.append(batch(2))
    part.append(batch(0, pid=PID + 1, epoch=3))
    part.log.append(encode_batch([(b"k", b"plain", [], 1)]))  # not idempotent
    part.reopen()
    retry = part.append(batch(2))
    assert (retry.base_offset, retry.last_offset) == (2, 3)
    assert part.error(batch(5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert part.error(batch(2, pid=PID + 1, epoch=2)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert part.append(batch(4)).base_offset == 7
    # Ids found in the log are never handed out again.
    assert part.producers.allocate_producer_id() > PID + 1


def test_log_append_time_of_a_retry_is_the_original(tmp_path: Path) -> None:
    part = Partition(tmp_path, TopicConfig(message_timestamp_type="LogAppendTime"))
    try:
        first = part.append(batch(0))
        assert first.log_append_time_ms > 0
        assert part.append(batch(0)).log_append_time_ms == first.log_append_time_ms
        part.reopen()
        assert part.append(batch(0)).log_append_time_ms == first.log_append_time_ms
    finally:
        part.log.close()


def test_expiry_forgets_idle_producers(part: Partition) -> None:
    part.producers = ProducerStateManager(part.tmp_path, expiration_ms=1000,
                                          clock=lambda: 100.0)
    part.append(batch(0))
    assert part.producers.expire(now_ms=100_500) == 0
    assert part.producers.expire(now_ms=101_001) == 1
    assert part.append(batch(9)).base_offset == 2  # unknown again: any sequence


def test_producer_ids_survive_restarts_in_blocks(tmp_path: Path) -> None:
    ids = ProducerIdAllocator(tmp_path)
    first = [ids.allocate() for _ in range(3)]
    assert first == [0, 1, 2]
    again = ProducerIdAllocator(tmp_path)
    assert again.allocate() == 1000  # the rest of the reserved block is skipped
    assert (tmp_path / "producer-ids.properties").read_text() == "next.block.start=2000\n"
    (tmp_path / "producer-ids.properties").write_text("garbage\n")
    with pytest.raises(OSError, match=r"next\.block\.start"):
        ProducerIdAllocator(tmp_path)


def test_meta_properties_keep_the_cluster_id_and_the_node_id(tmp_path: Path) -> None:
    cluster = load_or_create_meta(tmp_path, 3)
    assert len(cluster) == 22 and load_or_create_meta(tmp_path, 3) == cluster
    assert "cluster.id=" + cluster in (tmp_path / "meta.properties").read_text()
    with pytest.raises(BrokerConfigError, match="belongs to node 3"):
        load_or_create_meta(tmp_path, 4)
