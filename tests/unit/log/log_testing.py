"""Helpers shared by the PartitionLog tests: a fake clock, opening logs, reading everything."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from core.log.config import TopicConfig
from core.log.log import PartitionLog
from core.log.records import Record, decode_batch, encode_batch, iter_batches

TOPIC = "t"


class FakeClock:
    """A clock the test moves by hand; called like ``time.time`` (seconds)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.ms = start_ms

    def __call__(self) -> float:
        return self.ms / 1000

    def advance(self, ms: int) -> int:
        self.ms += ms
        return self.ms


def config(**overrides: object) -> TopicConfig:
    """A TopicConfig from Kafka names written with underscores (segment_bytes=...)."""
    return TopicConfig().with_overrides({k.replace("_", "."): v for k, v in overrides.items()})


def open_log(directory: Path, cfg: TopicConfig | None = None,
             clock: FakeClock | None = None) -> PartitionLog:
    return PartitionLog.open(directory, TOPIC, 0, cfg or TopicConfig(),
                             clock=clock or FakeClock())


def batch_of(records: list[tuple[bytes | None, bytes | None]], timestamp: int,
             headers: Mapping[str, bytes] | None = None) -> bytearray:
    hdrs = list((headers or {}).items())
    return encode_batch([(k, v, hdrs, timestamp) for k, v in records])


def read_all(plog: PartitionLog, start: int | None = None, max_bytes: int = 1 << 16,
             max_offset: int | None = None) -> list[Record]:
    """Every record from ``start`` (default: log start) to the end, as a consumer sees them:
    reading batch after batch and skipping records below the position (a batch may start
    before it)."""
    position = plog.log_start_offset if start is None else start
    end = plog.log_end_offset if max_offset is None else max_offset
    out: list[Record] = []
    while position < end:
        result = plog.read(position, max_bytes, max_offset=max_offset)
        if not result.data:
            break
        for pos, header in iter_batches(result.data):
            _, records = decode_batch(result.data, pos)
            out.extend(r for r in records if r.offset >= position)
            position = max(position, header.last_offset + 1)
    return out


def batches_of(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of each batch in ``data``."""
    return [(h.base_offset, h.last_offset) for _, h in iter_batches(data)]
