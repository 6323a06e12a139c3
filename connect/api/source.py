"""Source connectors and tasks: read data from an external system into Kafka topics."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from connect.api.connector import Connector, Task
from connect.api.coordinates import RecordMetadata
from connect.api.errors import IllegalWorkerStateError
from connect.api.record import SourceRecord
from connect.api.storage import OffsetStorageReader

__all__ = [
    "ConnectorTransactionBoundaries",
    "ExactlyOnceSupport",
    "SourceConnector",
    "SourceTask",
    "SourceTaskContext",
    "TransactionContext",
]


class ExactlyOnceSupport(Enum):
    """Whether a source connector can deliver exactly once with a given config (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(Enum):
    """Whether a source connector can define its own transaction boundaries (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class TransactionContext(ABC):
    """Lets a task with ``transaction.boundary=connector`` commit or abort transactions.

    Implemented by the runtime. Call only from ``poll()``, on the task's thread; the
    requests take effect once the runtime has dispatched the records concerned.
    """

    @abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit the transaction after ``record`` has been processed (it is the last
        record of the transaction) or, without a record, after the current batch of
        ``poll()`` records."""

    @abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort the transaction after ``record`` (the last record it discards) or,
        without a record, after the current batch; aborted records are not committed and
        their offsets are not stored."""


class SourceTaskContext(ABC):
    """What the runtime gives a source task in ``initialize()``; implemented by the
    runtime and safe to call from any of the task's threads."""

    @abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's config, as passed to ``start()``."""

    @abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """Reads the offsets stored for this connector's source partitions."""

    def transaction_context(self) -> TransactionContext | None:
        """The transaction context when the connector defines transaction boundaries
        (exactly-once support with ``transaction.boundary=connector``), else None."""
        return None


class SourceTask(Task):
    """Reads records from an external system; the runtime converts, transforms and
    produces them, and stores their source offsets.

    Lifecycle, in order:

    1. ``initialize(context)``: the runtime hands over the ``SourceTaskContext``.
    2. ``start(props)``: the task config; read stored offsets through
       ``context.offset_storage_reader()`` here to resume where the last run stopped.
    3. ``poll()`` repeatedly, on the task's own thread, while the task runs.
    4. ``commit_record(record, metadata)`` once per record returned by ``poll()``, when
       Kafka acknowledged it, or with None metadata when a transformation dropped it or
       error tolerance skipped it.
    5. ``commit()`` each time the runtime has stored offsets (``offset.flush.interval.ms``).
    6. ``stop()``: from another thread, while ``poll()`` may be blocked.

    Threading: ``start()`` and ``poll()`` run on the task's thread, one at a time.
    ``commit_record()``, ``commit()`` and ``stop()`` may run on other threads,
    concurrently with ``poll()``; make shared state thread-safe. ``commit_record()`` calls
    for records still in flight may arrive after ``stop()``.
    """

    def initialize(self, context: SourceTaskContext) -> None:
        """Keep the context; called once, before ``start()``. Overrides must call super."""
        self._context = context

    @property
    def context(self) -> SourceTaskContext:
        """The context given to ``initialize()``."""
        context: SourceTaskContext | None = getattr(self, "_context", None)
        if context is None:
            raise IllegalWorkerStateError(
                f"{type(self).__name__}.context was read before initialize(); the runtime "
                "initializes tasks before start(), so use the context from start() on."
            )
        return context

    @abstractmethod
    def poll(self) -> Sequence[SourceRecord] | None:
        """New records, or None (or an empty list) if none are available yet.

        Called repeatedly on the task's thread. Should block waiting for data, but return
        control to the caller regularly (by returning None, within about a second) so the
        runtime can pause, commit offsets and stop the task. Raise ``RetriableError`` to
        have ``poll()`` called again after a backoff; any other exception fails the task.
        """

    def commit(self) -> None:
        """Acknowledge in the source system everything ``poll()`` returned whose offsets
        the runtime has now stored (e.g. ack a message queue). Optional; the default does
        nothing. May run on another thread than ``poll()``; should not block for long."""

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """``record`` (as ``poll()`` returned it, before transformations) was written to
        Kafka at ``metadata``; None metadata means it was dropped by a transformation or
        skipped by error tolerance. Optional; the default does nothing. May run on another
        thread than ``poll()``, concurrently with it, and must not block."""

    @abstractmethod
    def stop(self) -> None:
        """Signal the task to stop. Called from a different thread than ``poll()``, which
        may be blocked at the time: set a flag or close what ``poll()`` waits on, so that
        it returns promptly; then release resources. ``poll()`` is not called after it
        returns."""


class SourceConnector(Connector):
    """A connector whose tasks are ``SourceTask``s; see ``Connector`` for the lifecycle.

    The hooks below have safe defaults; each may be called on an instance that was never
    started, on a runtime thread.
    """

    def exactly_once_support(
        self, connector_config: Mapping[str, str]
    ) -> ExactlyOnceSupport | None:
        """Whether the connector can deliver exactly once with this config; None (the
        default) means unknown, and the runtime then refuses ``exactly.once.support=
        required``."""
        return None

    def can_define_transaction_boundaries(
        self, connector_config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """Whether tasks can define transactions (``transaction.boundary=connector``)."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(
        self,
        connector_config: Mapping[str, str],
        offsets: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
    ) -> bool:
        """Called before the runtime alters or resets (None offset) the stored offsets of
        a stopped connector (``PATCH``/``DELETE /connectors/{name}/offsets``). Raise
        ``ConnectError`` to refuse; return True if the connector checked the request
        (or updated offsets it keeps externally). The default returns False: the runtime
        alters its offsets, telling the user the connector did not take part."""
        return False
