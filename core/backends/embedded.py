"""The ``embedded:PATH`` backend: the commit log and group coordinator in this process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from pathlib import Path
from typing import TypeVar

from core.backends import errors as be
from core.backends.base import LogBackend
from core.backends.batching import assign_partitions, encode_batches
from core.backends.embedded_groups import EmbeddedGroupsMixin
from core.backends.embedded_runtime import EmbeddedRuntime, acquire_runtime, release_runtime
from core.backends.partitioner import StickyPartitioner
from core.backends.translate import storage_errors
from core.backends.types import (
    ConsumerRecord,
    FetchResult,
    OffsetSpec,
    PartitionInfo,
    ProducerRecord,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)
from core.log.records import COMPRESSION_CODES, decode_batch_as, iter_batches

__all__ = ["MUST_EXIST", "EmbeddedBackend"]

T = TypeVar("T")

#: Setting ``"true"``: open an existing data directory only, never create one (tools that
#: only read, where a mistyped path must be an error rather than a new empty log).
MUST_EXIST = "ferry.embedded.must.exist"


def _parse_path(url: str) -> str:
    rest = url.split(":", 1)[1] if ":" in url else ""
    if rest.startswith("//"):
        rest = rest[2:]
    if not rest.strip():
        raise be.InvalidBackendUrlError(
            f"invalid log URL {url!r}: embedded: needs a data directory, e.g. embedded:./ferry-data"
        )
    return rest


def _check_existing(path: str) -> None:
    """``BackendError`` unless ``path`` is a data directory a log was created in."""
    from core.log.topic_metadata import TOPICS_DIR

    where = Path(path)
    if not where.is_dir():
        raise be.BackendError(
            f"no data directory at {path}: check the path (a log is created by ferry up, "
            "ferry broker or ferry topics create)")
    if not (where / TOPICS_DIR).is_dir():
        raise be.BackendError(f"{path} is not a Ferry data directory (it holds no log)")


#: The file a broker records its data directory's cluster id in (core/broker/meta.py; the
#: backends may not import the broker).
_META_FILE = "meta.properties"


class EmbeddedBackend(EmbeddedGroupsMixin, LogBackend):
    """The log in-process, on a data directory that this process locks.

    ``config`` holds broker settings by Kafka's names: ``num.partitions``,
    ``log.retention.ms``, ``log.segment.bytes``, ``log.flush.interval.messages``,
    ``group.initial.rebalance.delay.ms`` ...
    """

    def __init__(self, path: str, config: Mapping[str, str] | None = None, *,
                 owner: Mapping[str, object] | None = None) -> None:
        self.url = f"embedded:{path}"
        with storage_errors():
            self._runtime: EmbeddedRuntime | None = acquire_runtime(path, config or {}, owner)
        self._manager = self._runtime.manager
        self._coordinator = self._runtime.coordinator
        self._sticky = StickyPartitioner()
        self._close_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, config: Mapping[str, str] | None = None) -> EmbeddedBackend:
        path = _parse_path(url)
        if str((config or {}).get(MUST_EXIST, "")).strip().lower() == "true":
            _check_existing(path)
        return cls(path, config)

    @property
    def cluster_id(self) -> str | None:
        """The cluster id a broker formatted this data directory with (the ``cluster.id``
        line of its ``meta.properties``, written by ``core.broker.meta``), as
        ``KafkaBackend.cluster_id`` reports the cluster's; None for a directory no broker
        has served."""
        try:
            text = (self._manager.data_dir / _META_FILE).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cluster.id" and value.strip():
                return value.strip()
        return None

    def _check_open(self) -> EmbeddedRuntime:
        runtime = self._runtime
        if runtime is None:
            raise be.BackendError(f"the backend for {self.url} is closed")
        return runtime

    def _call(self, fn: Callable[[], T]) -> T:
        self._check_open()
        with storage_errors():
            return fn()

    # ------------------------------------------------------------------ topic admin

    def create_topic(self, name: str, partitions: int | None = None,
                     configs: Mapping[str, str] | None = None, *,
                     replication_factor: int | None = None,
                     validate_only: bool = False) -> None:
        runtime = self._check_open()
        if replication_factor is not None and replication_factor not in (1, -1):
            raise be.InvalidTopicError(
                f"replication factor {replication_factor} is larger than the 1 broker available "
                "(embedded logs keep one replica)"
            )
        count = runtime.settings.num_partitions if partitions in (None, -1) else partitions
        with storage_errors():
            self._manager.create_topic(name, count, dict(configs or {}),
                                       validate_only=validate_only)

    def delete_topic(self, name: str) -> None:
        def delete() -> None:
            if self._manager.topic(name).internal:
                raise be.InvalidTopicError(
                    f"topic {name!r} is internal (it holds the log's own state) and cannot be "
                    "deleted")
            self._manager.delete_topic(name)

        self._call(delete)

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        def names() -> list[str]:
            out = []
            for name in self._manager.topics():
                if include_internal or not self._manager.topic(name).internal:
                    out.append(name)
            return sorted(out)

        return self._call(names)

    def describe_topic(self, name: str) -> TopicDescription:
        def describe() -> TopicDescription:
            meta = self._manager.topic(name)
            parts = []
            for p in range(meta.partitions):
                plog = self._manager.log(name, p)
                parts.append(PartitionInfo(p, 0, (0,), (0,), plog.log_start_offset,
                                           plog.log_end_offset, plog.size_bytes))
            return TopicDescription(
                name=name,
                partitions=tuple(parts),
                configs=meta.config.to_kafka(),
                overrides=dict(meta.overrides),
                internal=meta.internal,
                topic_id=meta.topic_id,
            )

        return self._call(describe)

    def alter_topic_configs(self, name: str, set_configs: Mapping[str, str] | None = None,
                            delete_configs: Iterable[str] = ()) -> None:
        self._call(lambda: self._manager.alter_topic_configs(
            name, dict(set_configs or {}), list(delete_configs)))

    def partition_count(self, topic: str) -> int:
        return self._call(lambda: self._manager.topic(topic).partitions)

    # ------------------------------------------------------------------ produce

    def produce(self, topic: str, records: Sequence[ProducerRecord], *,
                acks: int = -1) -> list[RecordMetadata]:
        self._check_open()
        if not records:
            return []
        with storage_errors():
            meta = self._manager.topic(topic)
            count = meta.partitions
            # The topic's compression.type, as a Kafka broker recompresses what it stores:
            # "producer" keeps what this in-process producer writes, uncompressed batches.
            codec = COMPRESSION_CODES.get(meta.config.compression_type, 0)
            now = int(time.time() * 1000)
            groups = assign_partitions(
                topic, records, count, lambda: self._sticky.next_partition(topic, count))
            out: list[RecordMetadata | None] = [None] * len(records)
            new = tuple.__new__
            for partition, indexes in groups.items():
                plog = self._manager.log(topic, partition)
                for chunk, batch in encode_batches(records, indexes, compression=codec, now=now):
                    info = plog.append(batch, now_ms=now)
                    offsets = range(info.base_offset, info.base_offset + len(chunk))
                    if info.log_append_time_ms >= 0:
                        timestamps: Iterable[int] = repeat(info.log_append_time_ms)
                    else:
                        timestamps = [records[i][3] for i in chunk]
                        if None in timestamps:
                            timestamps = [now if t is None else t for t in timestamps]
                    # map/zip build the tuples in C: a Python loop here cost ~0.5 us/record.
                    metas = list(map(new, repeat(RecordMetadata),
                                     zip(repeat(topic), repeat(partition), offsets, timestamps)))
                    if chunk[-1] - chunk[0] == len(chunk) - 1:  # contiguous: one slice
                        out[chunk[0]:chunk[-1] + 1] = metas
                    else:
                        for i, meta in zip(chunk, metas, strict=True):
                            out[i] = meta
            return out  # type: ignore[return-value]

    # ------------------------------------------------------------------ fetch

    def fetch(self, positions: Mapping[TopicPartition, int], *, max_wait_ms: int = 0,
              max_bytes: int = 52428800,
              max_partition_bytes: int = 1048576) -> dict[TopicPartition, FetchResult]:
        self._check_open()
        with storage_errors():
            logs = {tp: self._manager.log(tp[0], tp[1]) for tp in positions}
            result = self._fetch_once(logs, positions, max_bytes, max_partition_bytes)
            if max_wait_ms <= 0 or any(r.records for r in result.values()):
                return result
            woken = threading.Event()

            def on_append(_end_offset: int) -> None:
                woken.set()

            for plog in logs.values():
                plog.add_append_listener(on_append)
            try:
                deadline = time.monotonic() + max_wait_ms / 1000
                while True:
                    result = self._fetch_once(logs, positions, max_bytes, max_partition_bytes)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._runtime is None or any(
                        r.records for r in result.values()
                    ):
                        return result
                    woken.wait(remaining)
                    woken.clear()
            finally:
                for plog in logs.values():
                    plog.remove_append_listener(on_append)

    def _fetch_once(self, logs: Mapping[TopicPartition, object],
                    positions: Mapping[TopicPartition, int], max_bytes: int,
                    max_partition_bytes: int) -> dict[TopicPartition, FetchResult]:
        out: dict[TopicPartition, FetchResult] = {}
        budget = max_bytes
        for tp, plog in logs.items():
            offset = positions[tp]
            records: list[ConsumerRecord] = []
            next_offset = offset
            if budget > 0 or not any(r.records for r in out.values()):
                read = plog.read(offset, max(1, min(max_partition_bytes, budget)))  # type: ignore[attr-defined]
                data = read.data
                for pos, header in iter_batches(data, validate=False):
                    _, batch = decode_batch_as(data, pos, ConsumerRecord, tp[0], tp[1], offset,
                                               validate=False)
                    records.extend(batch)
                    if header.next_offset > next_offset:
                        next_offset = header.next_offset
                budget -= len(data)
                hw, start = read.high_watermark, read.log_start_offset
            else:
                hw, start = plog.log_end_offset, plog.log_start_offset  # type: ignore[attr-defined]
            out[tp] = FetchResult(tp, records, hw, start, next_offset)
        return out

    def list_offsets(self, partitions: Iterable[TopicPartition],
                     spec: int) -> dict[TopicPartition, int]:
        def offsets() -> dict[TopicPartition, int]:
            out = {}
            for tp in partitions:
                plog = self._manager.log(tp[0], tp[1])
                if spec == OffsetSpec.EARLIEST:
                    out[tp] = plog.log_start_offset
                elif spec == OffsetSpec.LATEST:
                    out[tp] = plog.log_end_offset
                elif spec == OffsetSpec.MAX_TIMESTAMP:
                    found = plog.max_timestamp()
                    out[tp] = found[0] if found else -1
                else:
                    found = plog.offset_for_timestamp(spec)
                    out[tp] = found[0] if found else -1
            return out

        return self._call(offsets)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        with self._close_lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            release_runtime(runtime)
