"""The LogBackend interface: the one door to topics for everything outside ``core``.

Connect, the Schema Registry, the console tools and the Spark connector read and write
topics only through this interface, so switching from the in-process log to a Ferry broker
cluster or an Apache Kafka cluster is a change of URL (``embedded:PATH``,
``kafka://HOST:PORT[,...]``), never of code.

Contract for every implementation:

* **Threads.** Every method may be called concurrently from any thread. Calls that wait
  (``fetch`` with ``max_wait_ms``, ``join_group``, ``sync_group``) block only their caller.
* **Errors.** Only ``core.backends.errors.BackendError`` subclasses escape; a
  ``RetriableError`` means the same call may succeed later.
* **Lifecycle.** 1. construct through ``open_backend(url)``; 2. use; 3. ``close()``, after
  which every call raises ``BackendError``. ``close()`` is idempotent; backends are
  context managers.
* **Groups.** Membership follows Kafka's classic group protocol: ``join_group`` →
  (leader computes assignments) ``sync_group`` → ``heartbeat`` every
  ``session_timeout_ms / 3`` until ``RebalanceInProgressError`` asks for a rejoin →
  ``leave_group``. The protocol type is opaque (``consumer``, ``connect``, ``sr`` ...), as
  are member metadata and assignments.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from core.backends import errors as be
from core.backends.types import (
    FetchResult,
    GroupDescription,
    JoinResult,
    OffsetAndMetadata,
    ProducerRecord,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = ["DEFAULT_FETCH_MAX_BYTES", "DEFAULT_PARTITION_MAX_BYTES", "LogBackend"]

#: Kafka's consumer defaults ``fetch.max.bytes`` and ``max.partition.fetch.bytes``.
DEFAULT_FETCH_MAX_BYTES = 52428800
DEFAULT_PARTITION_MAX_BYTES = 1048576


class LogBackend(ABC):
    """Where topics live. See the module docstring for the threading and error contract."""

    #: The URL this backend was opened with, for messages and logs.
    url: str = ""

    # ------------------------------------------------------------------ topic admin

    @abstractmethod
    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        configs: Mapping[str, str] | None = None,
        *,
        replication_factor: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """Create a topic. ``None`` partitions or replication factor take the backend's
        default (``num.partitions``, ``default.replication.factor``); ``configs`` are
        Kafka topic config names. Raises ``TopicExistsError``, ``InvalidTopicError``,
        ``InvalidConfigError`` (naming the key). With ``validate_only`` nothing is created.
        """

    @abstractmethod
    def delete_topic(self, name: str) -> None:
        """Delete a topic and its data. Raises ``UnknownTopicError``."""

    @abstractmethod
    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Names of existing topics, sorted. Internal topics (``__consumer_offsets``) only
        with ``include_internal``."""

    @abstractmethod
    def describe_topic(self, name: str) -> TopicDescription:
        """Partitions with log start offsets and high watermarks, and effective configs.
        Raises ``UnknownTopicError``."""

    @abstractmethod
    def alter_topic_configs(
        self,
        name: str,
        set_configs: Mapping[str, str] | None = None,
        delete_configs: Iterable[str] = (),
    ) -> None:
        """Set and remove per-topic overrides (removed keys fall back to the default), as
        Kafka's IncrementalAlterConfigs does. Raises ``UnknownTopicError``,
        ``InvalidConfigError``. Changes apply to subsequent appends and maintenance."""

    @abstractmethod
    def partition_count(self, topic: str) -> int:
        """Number of partitions of ``topic``. Raises ``UnknownTopicError``."""

    # ------------------------------------------------------------------ produce / fetch

    @abstractmethod
    def produce(
        self, topic: str, records: Sequence[ProducerRecord], *, acks: int = -1
    ) -> list[RecordMetadata]:
        """Append ``records`` to ``topic`` and return where each landed, in input order.

        Records with ``partition=None`` are placed by Kafka's default partitioner: a keyed
        record goes to ``(murmur2(key) & 0x7fffffff) % partitions``; unkeyed records of one
        call stick to one partition, moving on to the next partition for the next call.
        Records bound for the same partition keep their relative order and are appended as
        one batch. Returns once the records are durable per ``acks`` (the topic's flush
        policy decides fsync). Raises ``UnknownTopicError`` (no auto-creation),
        ``RecordTooLargeError``, ``InvalidTopicError`` (partition out of range).
        """

    @abstractmethod
    def fetch(
        self,
        positions: Mapping[TopicPartition, int],
        *,
        max_wait_ms: int = 0,
        max_bytes: int = 52428800,
        max_partition_bytes: int = 1048576,
    ) -> dict[TopicPartition, FetchResult]:
        """Read records from each partition starting at its offset.

        Returns at once if any partition has records; otherwise waits up to
        ``max_wait_ms`` for an append to any of them (long poll), then returns what there
        is, possibly nothing. Each partition with records returns at least one whole batch
        even when it exceeds the byte limits (Kafka's progress guarantee). The result has an
        entry for every requested partition. Raises ``UnknownTopicError`` and
        ``OffsetOutOfRangeError`` (offset below the log start or past the log end; the
        error carries both) and ``CorruptRecordError`` (never serves a bad batch).
        """

    @abstractmethod
    def list_offsets(
        self, partitions: Iterable[TopicPartition], spec: int
    ) -> dict[TopicPartition, int]:
        """Offsets per partition for ``spec``: ``OffsetSpec.EARLIEST`` (log start offset),
        ``OffsetSpec.LATEST`` (high watermark), or a timestamp in ms (the first offset whose
        timestamp is at or after it, or -1 when there is none)."""

    # ------------------------------------------------------------------ group offsets

    @abstractmethod
    def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> None:
        """Commit offsets for a group. With ``generation_id=-1`` and no member the commit is
        a "simple" commit outside group membership (allowed only while the group has no
        members); otherwise the member and generation must be current
        (``IllegalGenerationError``, ``UnknownMemberIdError``,
        ``RebalanceInProgressError``). Committed offsets survive restarts."""

    @abstractmethod
    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of a group: for ``partitions``, or all when ``None``.
        Partitions without a commit are absent from the result."""

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """Delete committed offsets of a group, as Kafka's OffsetDelete does: any partition
        of an Empty group; of a consumer group with members, only topics it does not
        consume. A partition without a commit is not an error. Raises ``GroupError``
        (unknown group, a consumed topic, a non-consumer group with members) or
        ``UnknownTopicError``. Backends that cannot delete offsets keep this default,
        which raises ``BackendError``."""
        raise be.BackendError(f"the {type(self).__name__} cannot delete group offsets")

    # ------------------------------------------------------------------ group membership

    @abstractmethod
    def join_group(
        self,
        group_id: str,
        *,
        member_id: str,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        group_instance_id: str | None = None,
        client_id: str = "ferry",
    ) -> JoinResult:
        """Join (or rejoin) a group; blocks until the rebalance completes.

        A new dynamic member passes ``member_id=""``; the backend performs Kafka's
        MEMBER_ID_REQUIRED round trip itself and the result carries the assigned id.
        ``protocols`` are ``(name, metadata)`` in preference order; the coordinator picks
        one every member supports. The leader's result lists all members.
        Raises ``InconsistentGroupProtocolError``, ``UnknownMemberIdError``,
        ``FencedInstanceIdError``, ``GroupMaxSizeReachedError``, ``RetriableError``.
        """

    @abstractmethod
    def sync_group(
        self,
        group_id: str,
        *,
        generation_id: int,
        member_id: str,
        assignments: Mapping[str, bytes] | None = None,
        group_instance_id: str | None = None,
    ) -> bytes:
        """Second phase of a rebalance: the leader passes every member's assignment, the
        others pass none; blocks until the leader's assignment arrives and returns this
        member's. Raises ``RebalanceInProgressError`` (rejoin), ``IllegalGenerationError``,
        ``UnknownMemberIdError``."""

    @abstractmethod
    def heartbeat(
        self,
        group_id: str,
        *,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> None:
        """Keep the membership alive. Raises ``RebalanceInProgressError`` when the member
        must rejoin, ``IllegalGenerationError``, ``UnknownMemberIdError``,
        ``FencedInstanceIdError``."""

    @abstractmethod
    def leave_group(
        self, group_id: str, *, member_id: str, group_instance_id: str | None = None
    ) -> None:
        """Leave a group at once (triggers a rebalance for the others). Leaving a group
        the member is no longer in is not an error."""

    @abstractmethod
    def list_groups(self) -> list[tuple[str, str]]:
        """``(group_id, protocol_type)`` for every known group, sorted by id."""

    @abstractmethod
    def describe_group(self, group_id: str) -> GroupDescription:
        """State, protocol and members of a group; an unknown group is reported as ``Dead``
        with no members, as Kafka does."""

    # ------------------------------------------------------------------ lifecycle

    @abstractmethod
    def close(self) -> None:
        """Release everything; idempotent. In-flight waits return or raise promptly."""

    def __enter__(self) -> LogBackend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
