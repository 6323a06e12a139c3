"""Topic admin over the Kafka protocol: CreateTopics, DeleteTopics, Metadata, DescribeConfigs,
IncrementalAlterConfigs (AlterConfigs on brokers without it)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.metadata import MetadataRequest

from core.backends import errors as be
from core.backends.kafka.client import KafkaClient
from core.backends.kafka.codes import kafka_error
from core.backends.kafka.connection import UnsupportedVersionError
from core.backends.kafka.metadata import parse_metadata
from core.backends.kafka.offsets import OffsetLister
from core.backends.kafka.retry import Deadline, RetryableProblem
from core.backends.types import OffsetSpec, PartitionInfo, TopicDescription, TopicPartition
from core.protocol.errors import ErrorCode as E

__all__ = ["TopicAdmin"]

log = logging.getLogger(__name__)

_TOPIC_RESOURCE = 2
_DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs ConfigSource of a per-topic override
_SET, _DELETE = 0, 1  # IncrementalAlterConfigs operations
#: Codes after which an admin request may succeed on another try (or at the new controller).
_ADMIN_RETRY = frozenset({E.NOT_CONTROLLER, E.REQUEST_TIMED_OUT, E.LEADER_NOT_AVAILABLE,
                          E.THROTTLING_QUOTA_EXCEEDED})

_Creatable = CreateTopicsRequest.CreatableTopic


class TopicAdmin:
    """The topic admin methods of ``KafkaBackend``."""

    def __init__(self, client: KafkaClient, offsets: OffsetLister) -> None:
        self._client = client
        self._offsets = offsets

    def _send_admin(self, api: Any, build: Any, versions: tuple[int, int],
                    deadline: Deadline) -> Any:
        """Send to the controller when the metadata names one (clusters before KIP-590 need
        it), else to any broker."""
        client = self._client
        controller = client.metadata.controller_id
        if controller >= 0 and client.metadata.broker(controller) is not None:
            return client.send_to_node(controller, api, build, versions=versions,
                                       deadline=deadline)
        return client.send_to_any(api, build, versions=versions, deadline=deadline)

    # ------------------------------------------------------------------ create / delete

    def create_topic(self, name: str, partitions: int | None, configs: Mapping[str, str] | None,
                     replication_factor: int | None, validate_only: bool) -> None:
        client = self._client
        client.check_open()
        what = f"creating topic {name!r}"
        settings = {k: str(v) for k, v in (configs or {}).items()}
        topic = _Creatable(
            name=name, num_partitions=-1 if partitions is None else partitions,
            replication_factor=-1 if replication_factor is None else replication_factor,
            assignments=[],
            configs=[_Creatable.CreatableTopicConfig(name=k, value=v) for k, v in settings.items()])
        deadline = client.api_deadline()
        timeout_ms = client.config.request_timeout_ms
        attempts = [0]

        def attempt() -> None:
            attempts[0] += 1
            if client.metadata.controller_id < 0 or attempts[0] > 1:
                client.refresh_metadata([], deadline)  # the controller may have moved
            response = self._send_admin(
                CreateTopicsRequest,
                lambda v: CreateTopicsRequest(topics=[topic], timeout_ms=timeout_ms,
                                              validate_only=validate_only),
                (2, 6), deadline)
            result = response.topics[0]
            self._check(result.error_code, what, result.error_message, settings)

        client.retrying(what, attempt, deadline)
        if not validate_only:
            client.metadata.forget(name)
            # Brokers learn of a new topic from the controller a moment later; wait until the
            # metadata names its leaders so that a produce right after does not fail.
            client.retrying(what, lambda: self._await_topic(name, deadline), deadline)

    def _await_topic(self, name: str, deadline: Deadline) -> None:
        try:
            meta = self._client.topic(name, deadline, fresh=True)
        except be.UnknownTopicError as exc:
            raise RetryableProblem(be.BackendUnavailableError(
                f"topic {name!r} was created but the metadata does not show it yet")) from exc
        if any(p.leader < 0 for p in meta.partitions):
            raise RetryableProblem(be.RetriableError(f"topic {name!r} has no leaders yet"))
        # In a cluster each broker applies the controller's record a moment apart (as in
        # Kafka); a producer or consumer right after may ask any of them: wait for all.
        client = self._client
        for node_id in sorted(client.metadata.brokers()):
            response = client.send_to_node(node_id, MetadataRequest, lambda _v: MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                allow_auto_topic_creation=False, include_topic_authorized_operations=False),
                versions=(1, 12), deadline=deadline)
            found = parse_metadata(response).topics.get(name)
            if found is None or any(p.leader < 0 for p in found.partitions):
                raise RetryableProblem(be.BackendUnavailableError(
                    f"topic {name!r} was created but broker {node_id} does not show it yet"))

    def delete_topic(self, name: str) -> None:
        client = self._client
        client.check_open()
        what = f"deleting topic {name!r}"
        deadline = client.api_deadline()
        meta = client.retrying(what, lambda: client.topic(name, deadline, fresh=True), deadline)
        if meta.internal:
            raise be.InvalidTopicError(
                f"topic {name!r} is internal (it holds the cluster's own state) and cannot be "
                "deleted")
        timeout_ms = client.config.request_timeout_ms
        attempts = [0]

        def attempt() -> None:
            attempts[0] += 1
            if attempts[0] > 1:
                client.refresh_metadata([], deadline)  # the controller may have moved
            response = self._send_admin(
                DeleteTopicsRequest,
                lambda v: DeleteTopicsRequest(topic_names=[name], timeout_ms=timeout_ms),
                (1, 5), deadline)
            result = response.responses[0]
            self._check(result.error_code, what, result.error_message)

        client.retrying(what, attempt, deadline)
        client.metadata.forget(name)

        def gone() -> None:
            try:
                client.topic(name, deadline, fresh=True)
            except be.UnknownTopicError:
                return
            raise RetryableProblem(be.BackendUnavailableError(
                f"topic {name!r} was deleted but the metadata still shows it"))

        client.retrying(what, gone, deadline)
        client.metadata.forget(name)

    # ------------------------------------------------------------------ read

    def list_topics(self, include_internal: bool) -> list[str]:
        client = self._client
        client.check_open()
        deadline = client.api_deadline()
        snapshot = client.retrying("listing topics",
                                   lambda: client.refresh_metadata(None, deadline), deadline)
        # Topics answered with an error (no leader yet ...) exist all the same.
        names = set(snapshot.topics) | {
            n for n, code in snapshot.topic_errors.items()
            if code != E.UNKNOWN_TOPIC_OR_PARTITION}
        if not include_internal:
            names -= snapshot.internal
        return sorted(names)

    def partition_count(self, topic: str) -> int:
        client = self._client
        client.check_open()
        deadline = client.api_deadline()
        meta = client.retrying(f"partition count of topic {topic!r}",
                               lambda: client.topic(topic, deadline), deadline)
        return len(meta.partitions)

    def describe_topic(self, name: str) -> TopicDescription:
        client = self._client
        client.check_open()
        what = f"describing topic {name!r}"
        deadline = client.api_deadline()
        meta = client.retrying(what, lambda: client.topic(name, deadline, fresh=True), deadline)
        tps = [TopicPartition(name, p.partition) for p in meta.partitions]
        starts = self._offsets.list_offsets(tps, OffsetSpec.EARLIEST, deadline)
        ends = self._offsets.list_offsets(tps, OffsetSpec.LATEST, deadline)
        configs, overrides = self._describe_configs(name, deadline)
        sizes = self._leader_sizes(name, {p.partition: p.leader for p in meta.partitions},
                                   deadline)
        return TopicDescription(
            name=name,
            partitions=tuple(PartitionInfo(p.partition, p.leader, p.replicas, p.isr,
                                           starts[tp], ends[tp], sizes.get(p.partition))
                             for p, tp in zip(meta.partitions, tps, strict=True)),
            configs=configs, overrides=overrides, internal=meta.internal,
            topic_id=meta.topic_id)

    def _leader_sizes(self, name: str, leaders: Mapping[int, int],
                      deadline: Deadline) -> dict[int, int]:
        """Each partition's size on its leader, by DescribeLogDirs to each leader. Sizes
        are informational: a broker that cannot answer (too old, not authorized, down)
        leaves its partitions without one rather than failing the description."""
        by_leader: dict[int, list[int]] = {}
        for partition, leader in leaders.items():
            if leader >= 0:
                by_leader.setdefault(leader, []).append(partition)
        sizes: dict[int, int] = {}
        for leader, partitions in by_leader.items():
            topic = DescribeLogDirsRequest.DescribableLogDirTopic(
                topic=name, partitions=sorted(partitions))
            try:
                response = self._client.send_to_node(
                    leader, DescribeLogDirsRequest,
                    lambda v, topic=topic: DescribeLogDirsRequest(topics=[topic]),
                    versions=(1, 4), deadline=deadline)
            except (be.BackendError, RetryableProblem, UnsupportedVersionError) as exc:
                log.debug("no partition sizes from broker %d for %s: %s", leader, name, exc)
                continue
            for result in response.results:
                if result.error_code:
                    continue
                for topic_result in result.topics:
                    if topic_result.name != name:
                        continue
                    for p in topic_result.partitions:
                        if p.partition_index in partitions and not p.is_future_key:
                            sizes[p.partition_index] = p.partition_size
        return sizes

    def _describe_configs(self, name: str,
                          deadline: Deadline) -> tuple[dict[str, str], dict[str, str]]:
        client = self._client
        what = f"describing the configs of topic {name!r}"

        def attempt() -> tuple[dict[str, str], dict[str, str]]:
            response = client.send_to_any(
                DescribeConfigsRequest,
                lambda v: DescribeConfigsRequest(resources=[
                    DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=_TOPIC_RESOURCE, resource_name=name,
                        configuration_keys=None)],
                    include_synonyms=False, include_documentation=False),
                versions=(1, 4), deadline=deadline)
            result = response.results[0]
            self._check(result.error_code, what, result.error_message)
            configs = {c.name: c.value for c in result.configs if c.value is not None}
            overrides = {c.name: c.value for c in result.configs
                         if c.config_source == _DYNAMIC_TOPIC_CONFIG and c.value is not None}
            return configs, overrides

        return client.retrying(what, attempt, deadline)

    # ------------------------------------------------------------------ alter

    def alter_topic_configs(self, name: str, set_configs: Mapping[str, str] | None,
                            delete_configs: Iterable[str]) -> None:
        client = self._client
        client.check_open()
        what = f"altering the configs of topic {name!r}"
        changes = {k: str(v) for k, v in (set_configs or {}).items()}
        removed = [k for k in delete_configs if k not in changes]
        deadline = client.api_deadline()
        keys = [*changes, *removed]

        def incremental() -> None:
            resource = IncrementalAlterConfigsRequest.AlterConfigsResource
            entries = [resource.AlterableConfig(name=k, config_operation=_SET, value=v)
                       for k, v in changes.items()]
            entries += [resource.AlterableConfig(name=k, config_operation=_DELETE, value=None)
                        for k in removed]
            response = client.send_to_any(
                IncrementalAlterConfigsRequest,
                lambda v: IncrementalAlterConfigsRequest(resources=[resource(
                    resource_type=_TOPIC_RESOURCE, resource_name=name, configs=entries)],
                    validate_only=False),
                versions=(0, 1), deadline=deadline)
            result = response.responses[0]
            self._check(result.error_code, what, result.error_message, keys)

        try:
            client.retrying(what, incremental, deadline)
        except UnsupportedVersionError:
            log.info("broker lacks IncrementalAlterConfigs; altering %s with AlterConfigs", name)
            self._alter_whole(name, changes, removed, deadline)

    def _alter_whole(self, name: str, changes: dict[str, str], removed: list[str],
                     deadline: Deadline) -> None:
        """AlterConfigs replaces every override, so read the current ones and merge."""
        client = self._client
        what = f"altering the configs of topic {name!r}"
        _, overrides = self._describe_configs(name, deadline)
        wanted = {k: v for k, v in overrides.items() if k not in removed}
        wanted.update(changes)
        resource = AlterConfigsRequest.AlterConfigsResource

        def attempt() -> None:
            response = client.send_to_any(
                AlterConfigsRequest,
                lambda v: AlterConfigsRequest(resources=[resource(
                    resource_type=_TOPIC_RESOURCE, resource_name=name,
                    configs=[resource.AlterableConfig(name=k, value=val)
                             for k, val in wanted.items()])], validate_only=False),
                versions=(0, 2), deadline=deadline)
            result = response.responses[0]
            self._check(result.error_code, what, result.error_message, [*changes, *removed])

        client.retrying(what, attempt, deadline)

    @staticmethod
    def _check(code: int, what: str, message: str | None,
               config_keys: Iterable[str] = ()) -> None:
        if code == E.NONE:
            return
        error = kafka_error(code, what, message, config_keys=config_keys)
        if code in _ADMIN_RETRY:
            raise RetryableProblem(error, refresh_metadata=True)
        raise error
