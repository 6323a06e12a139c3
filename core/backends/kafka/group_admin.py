"""Group offsets (OffsetCommit, OffsetFetch) and group listing (ListGroups, DescribeGroups)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.consumer.group import OffsetDeleteRequest

from core.backends import errors as be
from core.backends.kafka.client import KafkaClient
from core.backends.kafka.codes import COORDINATOR_MOVED, kafka_error
from core.backends.kafka.connection import TransportError
from core.backends.kafka.groups import check_group_code, on_coordinator
from core.backends.kafka.retry import RetryableProblem
from core.backends.types import (
    GroupDescription,
    GroupMemberDescription,
    OffsetAndMetadata,
    TopicPartition,
)
from core.protocol.errors import ErrorCode as E

__all__ = ["GroupAdmin"]

_CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
_CommitPartition = _CommitTopic.OffsetCommitRequestPartition
_FetchTopic = OffsetFetchRequest.OffsetFetchRequestTopic
_DeleteTopic = OffsetDeleteRequest.OffsetDeleteRequestTopic
_DeletePartition = _DeleteTopic.OffsetDeleteRequestPartition


class GroupAdmin:
    """Offsets and listing half of the LogBackend group methods for ``KafkaBackend``."""

    def __init__(self, client: KafkaClient) -> None:
        self._client = client

    def commit_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                       *, generation_id: int, member_id: str,
                       group_instance_id: str | None) -> None:
        client = self._client
        client.check_open()
        if not group_id:
            raise be.GroupError("invalid group id: it must not be empty")
        what = f"offset commit of group {group_id!r}"
        by_topic: dict[str, list[Any]] = {}
        for tp, om in offsets.items():
            by_topic.setdefault(tp[0], []).append(_CommitPartition(
                partition_index=tp[1], committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch, committed_metadata=om.metadata))
        topics = [_CommitTopic(name=t, partitions=parts) for t, parts in by_topic.items()]

        def call(node: int) -> None:
            def build(version: int) -> Any:
                return OffsetCommitRequest(
                    group_id=group_id, generation_id_or_member_epoch=generation_id,
                    member_id=member_id, group_instance_id=group_instance_id,
                    retention_time_ms=-1, topics=topics)

            response = client.send_to_node(node, OffsetCommitRequest, build, versions=(2, 8),
                                           deadline=deadline)
            for t in response.topics:
                for p in t.partitions:
                    check_group_code(p.error_code, group_id,
                                     f"{what} for {t.name}-{p.partition_index}")

        deadline = client.api_deadline()
        on_coordinator(client, group_id, what, call, deadline)

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None
                      ) -> dict[TopicPartition, OffsetAndMetadata]:
        client = self._client
        client.check_open()
        what = f"offset fetch of group {group_id!r}"
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp[0], []).append(tp[1])
            if not by_topic:
                return {}
            topics = [_FetchTopic(name=t, partition_indexes=parts)
                      for t, parts in by_topic.items()]

        def call(node: int) -> dict[TopicPartition, OffsetAndMetadata]:
            def build(version: int) -> Any:
                return OffsetFetchRequest(group_id=group_id, topics=topics,
                                          require_stable=False)

            response = client.send_to_node(node, OffsetFetchRequest, build, versions=(2, 7),
                                           deadline=deadline)
            check_group_code(response.error_code, group_id, what)
            out = {}
            for t in response.topics:
                for p in t.partitions:
                    check_group_code(p.error_code, group_id,
                                     f"{what} for {t.name}-{p.partition_index}")
                    if p.committed_offset >= 0:  # -1: nothing committed
                        out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                            p.committed_offset, p.metadata or "", p.committed_leader_epoch)
            return out

        deadline = client.api_deadline()
        return on_coordinator(client, group_id, what, call, deadline)

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        client = self._client
        client.check_open()
        what = f"deleting offsets of group {group_id!r}"
        by_topic: dict[str, list[Any]] = {}
        for tp in partitions:
            by_topic.setdefault(tp[0], []).append(_DeletePartition(partition_index=tp[1]))
        if not by_topic:
            return
        topics = [_DeleteTopic(name=t, partitions=parts) for t, parts in by_topic.items()]

        def call(node: int) -> None:
            response = client.send_to_node(
                node, OffsetDeleteRequest,
                lambda v: OffsetDeleteRequest(group_id=group_id, topics=topics),
                versions=(0, 0), deadline=deadline)
            check_group_code(response.error_code, group_id, what)
            for t in response.topics:
                for p in t.partitions:
                    check_group_code(p.error_code, group_id,
                                     f"{what} for {t.name}-{p.partition_index}")

        deadline = client.api_deadline()
        on_coordinator(client, group_id, what, call, deadline)

    def list_groups(self) -> list[tuple[str, str]]:
        """Every broker coordinates some groups, so every broker is asked."""
        client = self._client
        client.check_open()
        deadline = client.api_deadline()
        found: dict[int, list[tuple[str, str]]] = {}

        def attempt() -> None:
            client.refresh_metadata([], deadline)
            retry: Exception | None = None
            for node in client.metadata.brokers():
                if node in found:
                    continue
                try:
                    response = client.send_to_node(node, ListGroupsRequest,
                                                   lambda v: ListGroupsRequest(),
                                                   versions=(0, 4), deadline=deadline)
                except TransportError as exc:
                    retry = retry or exc
                    continue
                if response.error_code in COORDINATOR_MOVED:
                    retry = retry or RetryableProblem(
                        kafka_error(response.error_code, "listing groups"))
                    continue
                if response.error_code:
                    raise kafka_error(response.error_code, "listing groups")
                found[node] = [(g.group_id, g.protocol_type) for g in response.groups]
            if retry is not None:
                raise retry

        client.retrying("listing groups", attempt, deadline)
        return sorted({g for groups in found.values() for g in groups})

    def describe_group(self, group_id: str) -> GroupDescription:
        client = self._client
        client.check_open()
        what = f"describing group {group_id!r}"

        def call(node: int) -> GroupDescription:
            response = client.send_to_node(
                node, DescribeGroupsRequest,
                lambda v: DescribeGroupsRequest(groups=[group_id],
                                                include_authorized_operations=False),
                versions=(0, 5), deadline=deadline)
            g = response.groups[0]
            if g.error_code == E.GROUP_ID_NOT_FOUND:
                return GroupDescription(group_id, "Dead", "", "", -1, ())
            check_group_code(g.error_code, group_id, what, g.error_message)
            return GroupDescription(
                group_id=group_id, state=g.group_state, protocol_type=g.protocol_type or "",
                protocol_name=g.protocol_data or "", generation_id=-1,
                members=tuple(GroupMemberDescription(
                    m.member_id, m.group_instance_id, m.client_id, m.client_host,
                    bytes(m.member_metadata or b""), bytes(m.member_assignment or b""))
                    for m in g.members))

        deadline = client.api_deadline()
        return on_coordinator(client, group_id, what, call, deadline)
