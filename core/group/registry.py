"""The coordinator's table of groups and its availability, guarded by one lock."""

from __future__ import annotations

import threading

from core.group.codes import ErrorCode
from core.group.group import Group

__all__ = ["GroupRegistry"]


class GroupRegistry:
    """Every live group by id, plus whether the coordinator is loaded and open.

    ``lock`` guards all of it and all group state. ``store_lock`` serialises appends to the
    offset store with the cache updates that follow them; it is always taken before
    ``lock``, never while holding it.
    """

    def __init__(self, *, loaded: bool):
        self.lock = threading.Lock()
        self.store_lock = threading.Lock()
        self.groups: dict[str, Group] = {}
        self.loaded = loaded
        self.closed = False

    def status_error(self, group_id: str, *, allow_empty_id: bool) -> int:
        """Kafka's validateGroupStatus. Offset and admin requests accept the empty group
        id (old clients commit under it); membership requests do not."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        return self.availability_error()

    def availability_error(self) -> int:
        if self.closed:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not self.loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE
