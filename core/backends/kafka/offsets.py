"""ListOffsets: log start offsets, high watermarks and offsets by timestamp, from each leader."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafka.protocol.consumer import ListOffsetsRequest

from core.backends.kafka.client import KafkaClient
from core.backends.kafka.codes import LEADER_MOVED, kafka_error
from core.backends.kafka.connection import TransportError
from core.backends.kafka.retry import Deadline, RetryableProblem
from core.backends.types import OffsetSpec, TopicPartition
from core.protocol.errors import ErrorCode as E

__all__ = ["OffsetLister"]

_Topic = ListOffsetsRequest.ListOffsetsTopic
_Partition = _Topic.ListOffsetsPartition


class OffsetLister:
    """``LogBackend.list_offsets`` for ``KafkaBackend``; the fetcher and admin use it too."""

    def __init__(self, client: KafkaClient) -> None:
        self._client = client

    def list_offsets(self, partitions: Iterable[TopicPartition], spec: int,
                     deadline: Deadline | None = None) -> dict[TopicPartition, int]:
        client = self._client
        client.check_open()
        wanted = [TopicPartition(tp[0], tp[1]) for tp in dict.fromkeys(partitions)]
        if not wanted:
            return {}
        deadline = deadline or client.api_deadline()
        found: dict[TopicPartition, int] = {}

        def attempt() -> None:
            pending = [tp for tp in wanted if tp not in found]
            retry: Exception | None = None
            for leader, tps in client.leaders(pending, deadline).items():
                try:
                    response = self._send(leader, tps, spec, deadline)
                except TransportError as exc:
                    retry = retry or exc
                    continue
                for t in response.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        if p.error_code == E.NONE:
                            found[tp] = p.offset
                            continue
                        error = kafka_error(p.error_code,
                                            f"listing offsets of {t.name}-{p.partition_index}")
                        if p.error_code in LEADER_MOVED or (
                                p.error_code == E.UNKNOWN_TOPIC_OR_PARTITION):
                            retry = retry or RetryableProblem(error, refresh_metadata=True)
                        else:
                            raise error
            if retry is not None:
                raise retry
            missing = [tp for tp in pending if tp not in found]
            if missing:
                raise RetryableProblem(kafka_error(
                    E.UNKNOWN_SERVER_ERROR, f"listing offsets: no answer for {missing[0]}"))

        client.retrying("listing offsets", attempt, deadline)
        return {tp: found[tp] for tp in wanted}

    def _send(self, leader: int, tps: list[TopicPartition], spec: int,
              deadline: Deadline) -> Any:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp[0], []).append(tp[1])

        def build(version: int) -> Any:
            return ListOffsetsRequest(
                replica_id=-1, isolation_level=0,
                topics=[_Topic(name=topic, partitions=[
                    _Partition(partition_index=p, current_leader_epoch=-1, timestamp=spec)
                    for p in parts]) for topic, parts in by_topic.items()])

        # MAX_TIMESTAMP (KIP-734) needs v7; earlier versions would misread -3 as a timestamp.
        versions = (7, 7) if spec == OffsetSpec.MAX_TIMESTAMP else (1, 7)
        return self._client.send_to_node(leader, ListOffsetsRequest, build, versions=versions,
                                         deadline=deadline)
