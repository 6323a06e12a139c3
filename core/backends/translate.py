"""Translation of lower-layer failures (storage errors, Kafka error codes) into BackendErrors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from core.backends import errors as be
from core.group import errors as ge
from core.log import errors as se

__all__ = ["KAFKA_ERROR_CODES", "error_for_code", "group_errors", "storage_errors"]

#: Kafka error codes the backends surface, mapped to the most specific BackendError.
KAFKA_ERROR_CODES: dict[int, tuple[type[be.BackendError], str]] = {
    1: (be.OffsetOutOfRangeError, "offset out of range"),
    2: (be.CorruptRecordError, "corrupt message"),
    3: (be.UnknownTopicError, "unknown topic or partition"),
    10: (be.RecordTooLargeError, "message too large"),
    14: (be.CoordinatorLoadInProgressError, "the coordinator is loading"),
    15: (be.BackendUnavailableError, "the coordinator is not available"),
    16: (be.NotCoordinatorError, "not the coordinator for this group"),
    17: (be.InvalidTopicError, "invalid topic"),
    22: (be.IllegalGenerationError, "illegal generation: the group has rebalanced; rejoin"),
    23: (be.InconsistentGroupProtocolError,
         "inconsistent group protocol: the protocol type or protocols do not match the group's"),
    24: (be.GroupError, "invalid group id"),
    25: (be.UnknownMemberIdError, "unknown member id: rejoin the group"),
    26: (be.GroupError, "invalid session timeout"),
    27: (be.RebalanceInProgressError, "the group is rebalancing: rejoin"),
    28: (be.GroupError, "invalid commit offset size"),
    36: (be.TopicExistsError, "topic already exists"),
    37: (be.InvalidTopicError, "invalid number of partitions"),
    40: (be.InvalidConfigError, "invalid config"),
    68: (be.GroupError, "the group is not empty"),
    69: (be.GroupError, "group id not found"),
    86: (be.GroupError, "the group's members consume this topic; stop them (or unsubscribe) "
                        "before deleting its offsets"),
    81: (be.GroupMaxSizeReachedError, "the group has reached its maximum size"),
    87: (be.InvalidRecordError, "invalid record"),
    82: (be.FencedInstanceIdError,
         "fenced: another member joined with the same group.instance.id"),
    12: (be.GroupError, "offset metadata too large"),
    # Codes a network backend meets; the retriable ones surface only once retries run out.
    -1: (be.BackendError, "the broker failed with an unexpected server error; see its log"),
    5: (be.RetriableError, "the partition has no leader right now (an election is running)"),
    6: (be.RetriableError, "the broker is not the partition's leader any more"),
    7: (be.BackendUnavailableError, "the request timed out on the broker"),
    8: (be.BackendUnavailableError, "the broker is not available"),
    13: (be.BackendUnavailableError, "the connection to the broker failed"),
    18: (be.RecordTooLargeError, "the request's record list is too large"),
    19: (be.RetriableError, "not enough in-sync replicas to accept the write"),
    20: (be.RetriableError,
         "the write was stored but too few replicas remain in sync; it may be duplicated"),
    21: (be.BackendError, "invalid required acks: use 0, 1 or -1 (all)"),
    29: (be.BackendError, "not authorized to access the topic"),
    30: (be.GroupError, "not authorized to access the group"),
    31: (be.BackendError, "not authorized for this cluster operation"),
    32: (be.InvalidRecordError, "invalid record timestamp (outside the topic's allowed range)"),
    35: (be.BackendError, "the broker does not support this request version"),
    38: (be.InvalidTopicError, "invalid replication factor"),
    39: (be.InvalidTopicError, "invalid replica assignment"),
    41: (be.RetriableError, "the broker is not the controller"),
    42: (be.BackendError, "the broker rejected the request as invalid"),
    44: (be.InvalidConfigError, "the request violates the broker's policy"),
    56: (be.RetriableError, "the broker's log directory is failing"),
    73: (be.BackendError, "topic deletion is disabled on this cluster"),
    74: (be.RetriableError, "the leader epoch is stale"),
    75: (be.RetriableError, "the leader epoch is unknown to the broker"),
    76: (be.BackendError, "the topic does not accept this compression type"),
    78: (be.RetriableError, "the offset is not available yet"),
    88: (be.RetriableError, "there are unstable offsets (pending transactions)"),
    89: (be.RetriableError, "throttled by the broker's quota; retry later"),
    91: (be.BackendError, "the resource was not found"),
    100: (be.UnknownTopicError, "unknown topic id"),
}


def error_for_code(code: int, context: str = "") -> be.BackendError:
    """The BackendError for Kafka error ``code``, with ``context`` (what was being done)."""
    cls, text = KAFKA_ERROR_CODES.get(code, (be.BackendError, f"Kafka error code {code}"))
    message = f"{context}: {text}" if context else text
    return cls(message)


@contextmanager
def storage_errors() -> Iterator[None]:
    """Re-raise storage-engine errors as the matching BackendError (``from`` the original)."""
    try:
        yield
    except se.InvalidConfigError as exc:
        raise be.InvalidConfigError(str(exc), key=exc.key) from exc
    except se.OffsetOutOfRangeError as exc:
        raise be.OffsetOutOfRangeError(
            str(exc), log_start_offset=exc.log_start_offset, log_end_offset=exc.log_end_offset
        ) from exc
    except se.CorruptRecordError as exc:
        raise be.CorruptRecordError(str(exc)) from exc
    except se.RecordTooLargeError as exc:
        raise be.RecordTooLargeError(str(exc)) from exc
    except se.TopicExistsError as exc:
        raise be.TopicExistsError(str(exc)) from exc
    except se.UnknownTopicError as exc:
        raise be.UnknownTopicError(str(exc)) from exc
    except se.InvalidRecordError as exc:
        raise be.InvalidRecordError(str(exc)) from exc
    except se.InvalidTopicError as exc:
        raise be.InvalidTopicError(str(exc)) from exc
    except se.LogDirLockedError as exc:
        raise be.LogDirInUseError(str(exc)) from exc
    except se.LogClosedError as exc:
        raise be.BackendError(f"the log is closed: {exc}") from exc
    except se.StorageError as exc:
        raise be.BackendError(str(exc)) from exc
    except OSError as exc:
        raise be.BackendError(f"storage I/O failed: {exc}") from exc


@contextmanager
def group_errors(context: str) -> Iterator[None]:
    """Re-raise coordinator errors (which carry Kafka error codes) as BackendErrors."""
    try:
        yield
    except (ge.CoordinatorError, ge.OffsetStoreError) as exc:
        raise error_for_code(exc.error_code, f"{context}: {exc}") from exc
    except ge.GroupError as exc:
        raise be.GroupError(f"{context}: {exc}") from exc
