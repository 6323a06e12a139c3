"""The ACL authorizer: Kafka's ``StandardAuthorizer`` decisions over stored ACLs.

Enabled by ``authorizer.class.name`` (Kafka's class names are accepted, so a copied
``server.properties`` works). A decision for (principal, host, operation, resource):

1. a principal in ``super.users`` is allowed everything;
2. any matching DENY ACL denies (DENY before ALLOW);
3. any matching ALLOW ACL allows; ALLOW on READ, WRITE, DELETE or ALTER also allows
   DESCRIBE, ALLOW on ALTER_CONFIGS also allows DESCRIBE_CONFIGS, ALLOW on ALL allows all;
4. otherwise: if no ACL at all applies to the resource and
   ``allow.everyone.if.no.acl.found`` is true, allow; else deny.

A DENY ACL denies only its own operation (or every operation for ALL), as in Kafka.
The ACLs live in an ``AclStore``: on a single node a file, changed here under one lock and
written before a change is answered; on a cluster the committed metadata, changed through
the controller, which the authorizer reloads whenever the store's ``acls_version`` moves.
Until a cluster node has caught up with the metadata (version None) only super users are
allowed, as Kafka's StandardAuthorizer refuses requests before its initial load: an empty
ACL set must never pass for the real one. Safe from any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence

from core.broker.security.acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourceType,
)
from core.broker.security.principal import KafkaPrincipal
from core.broker.security.store import AclStore

__all__ = ["KAFKA_AUTHORIZERS", "Authorizer", "parse_super_users"]

log = logging.getLogger(__name__)

#: ``authorizer.class.name`` values that enable the authorizer.
KAFKA_AUTHORIZERS = frozenset({
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
})

_O = AclOperation
_IMPLIES_DESCRIBE = frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:ops``)."""
    users = set()
    for item in text.split(";"):
        item = item.strip()
        if item:
            KafkaPrincipal.parse(item)  # raises ValueError naming the bad entry
            users.add(item)
    return frozenset(users)


class Authorizer:
    def __init__(self, store: AclStore, *, super_users: Iterable[str] = (),
                 allow_if_no_acl: bool = False) -> None:
        self._store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._lock = threading.Lock()
        self._acls: tuple[AclBinding, ...] = ()
        self._by_type: dict[ResourceType, tuple[AclBinding, ...]] = {}
        self._version = store.acls_version()
        self._set(store.load_acls())

    def _refresh(self) -> bool:
        """Reload the ACLs if the store changed behind this authorizer (the cluster
        metadata); False while the store is not loaded yet."""
        version = self._store.acls_version()
        if version != self._version:
            acls = self._store.load_acls() if version is not None else []
            self._set(acls)
            self._version = version  # after the load: a change meanwhile reloads again
        return version is not None

    def _set(self, acls: Sequence[AclBinding]) -> None:
        """Replace the snapshot (readers see the old or the new one, never a mix)."""
        by_type: dict[ResourceType, list[AclBinding]] = {}
        for acl in acls:
            by_type.setdefault(acl.pattern.resource_type, []).append(acl)
        self._by_type = {rt: tuple(group) for rt, group in by_type.items()}
        self._acls = tuple(acls)

    # ------------------------------------------------------------------ decisions

    def authorize(self, principal: KafkaPrincipal | str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        who = str(principal)
        if who in self.super_users:
            return True
        if not self._refresh():
            return False
        acls = self._by_type.get(resource_type, ())  # a snapshot; changes replace it
        found = False
        allowed = False
        for acl in acls:
            if not acl.pattern.matches(resource_type, name):
                continue
            found = True
            if acl.principal not in (who, WILDCARD_PRINCIPAL):
                continue
            if acl.host not in (host, WILDCARD):
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.operation in (operation, _O.ALL):
                    return False
            elif _allows(acl.operation, operation):
                allowed = True
        if allowed:
            return True
        return not found and self.allow_if_no_acl

    def authorized_operations(self, principal: KafkaPrincipal | str, host: str,
                              resource_type: ResourceType, name: str,
                              supported: Iterable[AclOperation]) -> frozenset[AclOperation]:
        """The operations of ``supported`` the principal may perform on the resource (the
        authorized-operations fields of Metadata, DescribeGroups and DescribeCluster)."""
        return frozenset(op for op in supported
                         if self.authorize(principal, host, op, resource_type, name))

    def any_allowed(self, principal: KafkaPrincipal | str, host: str, operation: AclOperation,
                    resource_type: ResourceType) -> bool:
        """Whether the principal may perform ``operation`` on some resource of the type
        (Kafka's ``authorizeByResourceType``, used for idempotent producers, KIP-679)."""
        who = str(principal)
        if who in self.super_users:
            return True
        if not self._refresh():
            return False
        acls = [a for a in self._acls if a.pattern.resource_type == resource_type
                and a.principal in (who, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)]
        for acl in acls:
            # An ALLOW not cancelled by a DENY of the same pattern or a literal * DENY
            # (Kafka's authorizeByResourceType, simplified to whole patterns).
            if acl.permission == AclPermissionType.ALLOW and _allows(acl.operation, operation) \
                    and not any(d.permission == AclPermissionType.DENY
                                and d.operation in (operation, _O.ALL)
                                and (d.pattern.name == WILDCARD or d.pattern == acl.pattern)
                                for d in acls):
                return True
        return self.allow_if_no_acl and not any(
            a.pattern.resource_type == resource_type for a in self._acls)

    # ------------------------------------------------------------------ administration

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        self._refresh()
        acls = self._acls
        return [a for a in acls if acl_filter is None or acl_filter.matches(a)]

    def create(self, bindings: Sequence[AclBinding]) -> None:
        """Add valid bindings (each checked by the caller); stored before returning."""
        with self._lock:
            current = list(self._acls)
            added = [b for b in dict.fromkeys(bindings) if b not in current]
            if not added:
                return
            current.extend(added)
            self._store.save_acls(current)
            self._set(current)
        for b in added:
            log.info("ACL added: %s", _describe(b))

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every ACL matching each filter; per filter, the ACLs it removed."""
        with self._lock:
            current = list(self._acls)
            removed = [[a for a in current if f.matches(a)] for f in filters]
            gone = {a for group in removed for a in group}
            if gone:
                kept = [a for a in current if a not in gone]
                self._store.save_acls(kept)
                self._set(kept)
        for group in removed:
            for b in group:
                log.info("ACL removed: %s", _describe(b))
        return removed


def _allows(granted: AclOperation, wanted: AclOperation) -> bool:
    if granted in (wanted, _O.ALL):
        return True
    if wanted == _O.DESCRIBE:
        return granted in _IMPLIES_DESCRIBE
    if wanted == _O.DESCRIBE_CONFIGS:
        return granted in _IMPLIES_DESCRIBE_CONFIGS
    return False


def _describe(b: AclBinding) -> str:
    p = b.pattern
    return (f"{b.principal} {b.permission.name} {b.operation.name} from host {b.host} on "
            f"{p.resource_type.name}:{p.pattern_type.name}:{p.name}")
