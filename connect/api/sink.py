"""Sink connectors and tasks: write records from Kafka topics into an external system."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import ClassVar

from connect.api.connector import Connector, Task
from connect.api.coordinates import OffsetAndMetadata, TopicPartition
from connect.api.errors import IllegalWorkerStateError
from connect.api.record import SinkRecord

__all__ = ["ErrantRecordReporter", "SinkConnector", "SinkTask", "SinkTaskContext"]


class ErrantRecordReporter(ABC):
    """Sends records the task cannot write to the dead letter queue and error log, as the
    connector's ``errors.*`` config says (KIP-610). Implemented by the runtime."""

    @abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Report ``record``, which failed with ``error``, and carry on with the others.

        Call from ``put()`` on the task's thread. Returns a future that completes once
        the report is written; a task must not let ``pre_commit()`` commit past a reported
        record before its future is done (waiting on the futures there is simplest).
        Raises ``ConnectError`` when the connector does not tolerate errors
        (``errors.tolerance=none``); letting it propagate fails the task.
        """


class SinkTaskContext(ABC):
    """What the runtime gives a sink task in ``initialize()``. Implemented by the runtime.
    Call its methods only from the task's own thread (inside ``open()``, ``put()``,
    ``pre_commit()`` ...): they act on the task's consumer, which is not thread-safe."""

    @abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's config, as passed to ``start()``."""

    @abstractmethod
    def offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind or skip: consume each partition from the given offset next. Use it in
        ``open()`` when the sink stores its own offsets (exactly-once sinks); it takes
        effect before the next ``put()``."""

    def offset(self, partition: TopicPartition, offset: int) -> None:
        """``offsets()`` for one partition."""
        self.offsets({partition: offset})

    @abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """How long to wait before redelivering records after ``put()`` raised
        ``RetriableError``. Set it before raising."""

    @abstractmethod
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned to this task."""

    @abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching from these partitions (e.g. the destination is throttling) until
        ``resume()``; records already fetched may still arrive. Survives rebalances only
        for partitions that stay assigned."""

    @abstractmethod
    def resume(self, *partitions: TopicPartition) -> None:
        """Resume fetching from paused partitions."""

    @abstractmethod
    def request_commit(self) -> None:
        """Ask for an offset commit (``pre_commit()``) soon, e.g. right after flushing to
        the destination; a hint without timing guarantee."""

    @abstractmethod
    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """The reporter for records the task cannot write, or None when the connector has
        no error handling configured (then raise from ``put()`` instead)."""


class SinkTask(Task):
    """Writes records from Kafka to an external system.

    Lifecycle, in order:

    1. ``initialize(context)``: the runtime hands over the ``SinkTaskContext``.
    2. ``start(props)``: the task config; connect to the destination.
    3. ``open(partitions)``: partitions assigned to the task (at start and after each
       rebalance), before any ``put()`` of their records; seek with
       ``context.offsets()`` here if the sink tracks offsets itself.
    4. ``put(records)`` repeatedly with records of assigned partitions, in offset order
       per partition (possibly an empty list, so a task can flush on time).
    5. ``pre_commit(offsets)`` before each offset commit (``offset.flush.interval.ms``,
       ``context.request_commit()``, and before partitions are closed): return the
       offsets that are safe to commit.
    6. ``close(partitions)``: partitions revoked by a rebalance, and every partition when
       the task stops; no ``put()`` follows for them until they are opened again.
    7. ``stop()``: last.

    Threading: every method is called on the task's own thread, one at a time (``stop()``
    too, after the last ``put()`` has returned), so a sink task needs no locking unless it
    starts threads of its own.
    """

    #: The connector key listing the topics to consume (comma-separated).
    TOPICS_CONFIG: ClassVar[str] = "topics"
    #: The connector key with a regex of topics to consume (instead of ``topics``).
    TOPICS_REGEX_CONFIG: ClassVar[str] = "topics.regex"

    def initialize(self, context: SinkTaskContext) -> None:
        """Keep the context; called once, before ``start()``. Overrides must call super."""
        self._context = context

    @property
    def context(self) -> SinkTaskContext:
        """The context given to ``initialize()``."""
        context: SinkTaskContext | None = getattr(self, "_context", None)
        if context is None:
            raise IllegalWorkerStateError(
                f"{type(self).__name__}.context was read before initialize(); the runtime "
                "initializes tasks before start(), so use the context from start() on."
            )
        return context

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        """Partitions newly assigned to this task; allocate writers for them. Optional;
        the default does nothing."""

    @abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write (or buffer) records. May block while writing, but long waits delay
        rebalances and commits; buffer and write in ``flush()`` instead when the
        destination is slow. Raise ``RetriableError`` (after ``context.timeout(ms)``) to
        have the same records delivered again; any other exception fails the task."""

    def flush(self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Make everything ``put()`` so far durable in the destination. Called by the
        default ``pre_commit()``; ``current_offsets`` are the next offsets to consume per
        partition. Optional; the default does nothing."""

    def pre_commit(
        self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> Mapping[TopicPartition, OffsetAndMetadata]:
        """The offsets it is safe to commit, given the next offsets to consume after the
        records ``put()`` so far; partitions left out are not committed. The default
        calls ``flush(current_offsets)`` and returns ``current_offsets``. Keys are the
        records' *original* partitions (``SinkRecord.original_topic`` and
        ``original_kafka_partition``), whatever transformations renamed. Raising skips
        this commit; the task goes on."""
        self.flush(current_offsets)
        return current_offsets

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        """Partitions revoked from this task; drop their writers and buffered records
        (they were offered to ``pre_commit()`` just before). Optional; the default does
        nothing."""

    @abstractmethod
    def stop(self) -> None:
        """Release resources; called on the task's thread after ``close()``."""


class SinkConnector(Connector):
    """A connector whose tasks are ``SinkTask``s; see ``Connector`` for the lifecycle.
    Its config always includes ``topics`` or ``topics.regex``."""

    #: The key listing the topics to consume, as in ``SinkTask``.
    TOPICS_CONFIG: ClassVar[str] = "topics"

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        """Called before the runtime alters or resets (None) the committed offsets of a
        stopped connector (``PATCH``/``DELETE /connectors/{name}/offsets``). Raise
        ``ConnectError`` to refuse; return True if the connector checked the request (or
        updated offsets it keeps in the destination). The default returns False."""
        return False
