"""The topics a ``consumer`` group subscribes to, read from its members' JoinGroup metadata.

OffsetDelete refuses to delete offsets of topics a live consumer group consumes, as Kafka
does. The coordinator treats member metadata as opaque bytes everywhere else; this reads
just the topic list of Kafka's ConsumerProtocolSubscription (versions 0-3 start with an
int16 version and an int32-counted array of int16-length topic names).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from core.group.errors import OffsetsFormatError
from core.group.offsets_format import Reader

__all__ = ["CONSUMER_PROTOCOL_TYPE", "subscribed_topics"]

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL_TYPE = "consumer"


def _topics(metadata: bytes) -> set[str]:
    reader = Reader(metadata, "ConsumerProtocolSubscription")
    if reader.int16() < 0:
        raise OffsetsFormatError("ConsumerProtocolSubscription has a negative version")
    return {reader.required_string() for _ in range(max(reader.int32(), 0))}


def subscribed_topics(group_id: str, protocol_type: str | None,
                      metadata: Iterable[bytes]) -> frozenset[str] | None:
    """Kafka's computeSubscribedTopics: the union of every member's subscribed topics for a
    ``consumer`` group (empty when it has no members), None for other protocol types or
    when a member's metadata cannot be read (no topic then counts as subscribed)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    topics: set[str] = set()
    try:
        for data in metadata:
            topics |= _topics(bytes(data))
    except OffsetsFormatError as exc:
        log.debug("group %s: cannot read a member's subscription: %s", group_id, exc)
        return None
    return frozenset(topics)
