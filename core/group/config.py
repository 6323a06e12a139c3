"""Settings of the group coordinator, with Kafka's broker config names and defaults."""

from __future__ import annotations

from dataclasses import dataclass

from core.group.errors import InvalidCoordinatorConfigError

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "CoordinatorConfig"]

#: How long a brand-new member may wait in its first JoinGroup (Kafka's
#: GroupCoordinator.NewMemberJoinTimeoutMs). It has no session yet, and a client that gave
#: up and retried would otherwise leave a defunct member behind for the whole rebalance.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Typed coordinator settings; each field names the Kafka broker config it mirrors."""

    #: group.initial.rebalance.delay.ms
    initial_rebalance_delay_ms: int = 3000
    #: group.min.session.timeout.ms
    min_session_timeout_ms: int = 6000
    #: group.max.session.timeout.ms
    max_session_timeout_ms: int = 1800000
    #: group.max.size
    max_size: int = 2**31 - 1
    #: offsets.retention.minutes, in ms
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    #: offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600000
    #: offset.metadata.max.bytes
    offset_metadata_max_bytes: int = 4096
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    def __post_init__(self) -> None:
        for name in ("initial_rebalance_delay_ms", "min_session_timeout_ms",
                     "offset_metadata_max_bytes"):
            if getattr(self, name) < 0:
                raise InvalidCoordinatorConfigError(
                    f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("max_size", "offsets_retention_ms", "offsets_retention_check_interval_ms",
                     "new_member_join_timeout_ms"):
            if getattr(self, name) < 1:
                raise InvalidCoordinatorConfigError(
                    f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_session_timeout_ms < self.min_session_timeout_ms:
            raise InvalidCoordinatorConfigError(
                f"group max session timeout ({self.max_session_timeout_ms} ms) is below the "
                f"min session timeout ({self.min_session_timeout_ms} ms)")
