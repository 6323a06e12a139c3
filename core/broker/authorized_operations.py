"""Kafka's authorized-operations bitfields, as answered while no authorizer is configured.

Metadata (v8+), DescribeCluster and DescribeGroups can report which ACL operations the
caller may perform on a resource. Kafka's broker answers, without an authorizer, every
operation its ACL model supports for that resource type (``AclEntry.supportedOperations``),
each as bit ``1 << AclOperation.code``; a client that did not ask gets Integer.MIN_VALUE.
Ferry has no authorizer, so these are the answers until ACLs exist.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["CLUSTER_OPERATIONS", "GROUP_OPERATIONS", "NOT_REQUESTED", "TOPIC_OPERATIONS",
           "AclOperation", "bitfield"]

#: An authorized-operations field the request did not ask for: kafka-python encodes None
#: as Integer.MIN_VALUE (only bit 31 set).
NOT_REQUESTED = None


class AclOperation(IntEnum):
    """Kafka's AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


def bitfield(operations: frozenset[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``code`` set for each operation."""
    value = 0
    for operation in operations:
        value |= 1 << operation
    return value


# kafka-python's message classes take a bitfield as the set of its bit positions.
_O = AclOperation
TOPIC_OPERATIONS = frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                              _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})
CLUSTER_OPERATIONS = frozenset({_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS,
                                _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE})
GROUP_OPERATIONS = frozenset({_O.READ, _O.DESCRIBE, _O.DELETE})
