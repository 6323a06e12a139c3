"""Kafka's ACL model: resource patterns, access control entries, bindings and filters.

The codes are Kafka's wire codes (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``), so a binding goes to and from CreateAcls/DescribeAcls/DeleteAcls
without translation. Matching follows ``StandardAuthorizerData``: an ACL applies to a
resource when its pattern is LITERAL with the resource's name or ``*``, or PREFIXED with a
prefix of the name; to a principal when it names it or ``User:*``; to a host when it names
it or ``*``. Filters (DescribeAcls, DeleteAcls) use ANY for "any value" and MATCH for "every
pattern that would apply to this name".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from core.broker.authorized_operations import AclOperation

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "InvalidAclError",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
#: The one CLUSTER resource's name.
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAclError(ValueError):
    """An ACL or filter a client may not create or use; the message says why."""


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this (stored, concrete) pattern applies to the resource."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return False


@dataclass(frozen=True)
class AclBinding:
    """One stored ACL: a pattern plus principal, host, operation and permission."""

    pattern: ResourcePattern
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def validate(self) -> None:
        """Raise InvalidAclError for a binding Kafka's CreateAcls refuses."""
        p = self.pattern
        if p.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise InvalidAclError("the resource type must be concrete (not ANY or UNKNOWN)")
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAclError("the pattern type must be LITERAL or PREFIXED")
        if not p.name:
            raise InvalidAclError("the resource name must not be empty")
        if p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME:
            raise InvalidAclError(f"the cluster resource is named {CLUSTER_NAME!r}")
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise InvalidAclError("the operation must be concrete (not ANY or UNKNOWN)")
        if self.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise InvalidAclError("the permission type must be ALLOW or DENY")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise InvalidAclError(
                f"principal {self.principal!r} is not of the form Type:name, e.g. User:alice")
        if not self.host:
            raise InvalidAclError("the host must not be empty (use * for any host)")

    def to_json(self) -> dict[str, object]:
        p = self.pattern
        return {"resource_type": p.resource_type.name, "name": p.name,
                "pattern_type": p.pattern_type.name, "principal": self.principal,
                "host": self.host, "operation": self.operation.name,
                "permission": self.permission.name}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AclBinding:
        return cls(ResourcePattern(ResourceType[str(data["resource_type"])], str(data["name"]),
                                   PatternType[str(data["pattern_type"])]),
                   str(data["principal"]), str(data["host"]),
                   AclOperation[str(data["operation"])],
                   AclPermissionType[str(data["permission"])])


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select; None (null on the wire) matches anything."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def to_json(self) -> dict[str, object]:
        return {"resource_type": self.resource_type.name, "name": self.name,
                "pattern_type": self.pattern_type.name, "principal": self.principal,
                "host": self.host, "operation": self.operation.name,
                "permission": self.permission.name}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AclBindingFilter:
        def text(key: str) -> str | None:
            return None if data.get(key) is None else str(data[key])

        return cls(ResourceType[str(data["resource_type"])], text("name"),
                   PatternType[str(data["pattern_type"])], text("principal"), text("host"),
                   AclOperation[str(data["operation"])],
                   AclPermissionType[str(data["permission"])])

    def validate(self) -> None:
        if ResourceType.UNKNOWN in (self.resource_type,) or \
                self.pattern_type == PatternType.UNKNOWN or \
                self.operation == AclOperation.UNKNOWN or \
                self.permission == AclPermissionType.UNKNOWN:
            raise InvalidAclError("a filter must not hold UNKNOWN values")

    def matches(self, acl: AclBinding) -> bool:
        p = acl.pattern
        if self.resource_type != ResourceType.ANY and self.resource_type != p.resource_type:
            return False
        if not self._pattern_matches(p):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission in (AclPermissionType.ANY, acl.permission)

    def _pattern_matches(self, p: ResourcePattern) -> bool:
        if self.pattern_type == PatternType.MATCH:
            # Every stored pattern that would apply to a resource of this name.
            if self.name is None:
                return True
            if p.pattern_type == PatternType.LITERAL:
                return p.name in (self.name, WILDCARD)
            return p.pattern_type == PatternType.PREFIXED and self.name.startswith(p.name)
        if self.pattern_type not in (PatternType.ANY, p.pattern_type):
            return False
        return self.name is None or self.name == p.name
