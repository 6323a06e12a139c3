"""The active controller's decisions on the cluster's security metadata (sans-IO): ACLs,
SCRAM credentials and client quotas, after Kafka's AclControlManager, ScramControlManager
and ClientQuotaControlManager.

Each function reads the controller's image, checks every item with the same rules a single
node applies (``core.broker.security``), and returns the records to append with one result
per item, so one request's valid items are committed together and its invalid ones are
answered with Kafka's error codes:

* CreateAcls: an invalid binding is INVALID_REQUEST; a binding already stored (or twice in
  the request) adds no record and succeeds, as in Kafka.
* DeleteAcls: per filter, every stored binding it matches (an ACL matched by several
  filters is listed by each, removed once); a filter matching nothing succeeds empty.
* AlterUserScramCredentials: ``core.broker.security.scram_changes``' rules, deletions of
  a credential that does not exist being RESOURCE_NOT_FOUND.
* AlterClientQuotas: an unsupported entity, key or value is INVALID_REQUEST; removing a key
  that is not set adds no record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from core.broker.security.quotas import QuotaAlteration, alteration_problem
from core.broker.security.scram_changes import ScramChange, refused_users
from core.cluster.image import MetadataImage
from core.cluster.records import (
    AccessControlEntry,
    ClientQuota,
    MetadataRecord,
    RemoveAccessControlEntry,
    RemoveUserScramCredential,
    UserScramCredential,
)
from core.protocol.errors import ErrorCode

__all__ = ["alter_client_quotas", "alter_scram_credentials", "binding_of",
           "controller_alter_client_quotas", "controller_alter_scram_credentials",
           "controller_create_acls", "controller_delete_acls", "create_acls", "delete_acls",
           "security_operation"]

#: (Kafka error code, message or None) per item of a request
Result = tuple[int, str | None]


def binding_of(entry: AccessControlEntry) -> AclBinding:
    """The ACL binding an AccessControlEntry record stores."""
    return AclBinding(ResourcePattern(ResourceType(entry.resource_type), entry.resource_name,
                                      PatternType(entry.pattern_type)),
                      entry.principal, entry.host, AclOperation(entry.operation),
                      AclPermissionType(entry.permission_type))


def create_acls(image: MetadataImage, bindings: Sequence[dict[str, Any]],
                new_id: Callable[[], str]) -> tuple[list[MetadataRecord], list[Result]]:
    """Records adding each valid, new binding (given as ``AclBinding.to_json``)."""
    stored = {binding_of(e) for e in image.acls.values()}
    records: list[MetadataRecord] = []
    results: list[Result] = []
    for data in bindings:
        try:
            binding = AclBinding.from_json(data)
            binding.validate()
        except (InvalidAclError, KeyError, TypeError, ValueError) as exc:
            results.append((ErrorCode.INVALID_REQUEST, f"invalid ACL: {exc}"))
            continue
        results.append((ErrorCode.NONE, None))
        if binding in stored:
            continue
        stored.add(binding)
        p = binding.pattern
        records.append(AccessControlEntry(new_id(), int(p.resource_type), p.name,
                                          int(p.pattern_type), binding.principal,
                                          binding.host, int(binding.operation),
                                          int(binding.permission)))
    return records, results


def delete_acls(image: MetadataImage, filters: Sequence[dict[str, Any]]
                ) -> tuple[list[MetadataRecord], list[tuple[int, str | None, list[AclBinding]]]]:
    """Records removing every ACL a valid filter (``AclBindingFilter.to_json``) matches;
    per filter its result and the bindings it matched."""
    entries = sorted(image.acls.values(), key=lambda e: e.id)
    bound = [(e, binding_of(e)) for e in entries]
    removed: dict[str, None] = {}
    results: list[tuple[int, str | None, list[AclBinding]]] = []
    for data in filters:
        try:
            acl_filter = AclBindingFilter.from_json(data)
            acl_filter.validate()
        except (InvalidAclError, KeyError, TypeError, ValueError) as exc:
            results.append((ErrorCode.INVALID_REQUEST, f"invalid ACL filter: {exc}", []))
            continue
        matched = [(e, b) for e, b in bound if acl_filter.matches(b)]
        removed.update(dict.fromkeys(e.id for e, _ in matched))
        results.append((ErrorCode.NONE, None, [b for _, b in matched]))
    return [RemoveAccessControlEntry(i) for i in removed], results


def alter_scram_credentials(image: MetadataImage, deletions: Sequence[ScramChange],
                            upserts: Sequence[ScramChange]
                            ) -> tuple[list[MetadataRecord], dict[str, Result]]:
    """Records for the changes of every user without a problem; user -> result."""
    errors = refused_users(deletions, upserts,
                           lambda user, mechanism: mechanism in image.scram.get(user, {}))
    records: list[MetadataRecord] = [
        RemoveUserScramCredential(d.name, d.mechanism_name or "")
        for d in deletions if d.name not in errors]
    for u in upserts:
        if u.name in errors or u.credential is None:
            continue
        c = u.credential
        records.append(UserScramCredential(u.name, u.mechanism_name or "", c.salt,
                                           c.stored_key, c.server_key, c.iterations))
    users = dict.fromkeys(c.name for c in [*deletions, *upserts])
    return records, {user: errors.get(user, (ErrorCode.NONE, None)) for user in users}


def alter_client_quotas(image: MetadataImage, alterations: Sequence[QuotaAlteration],
                        validate_only: bool) -> tuple[list[MetadataRecord], list[Result]]:
    """Records setting or removing each valid entry's keys (none when ``validate_only``)."""
    records: list[MetadataRecord] = []
    results: list[Result] = []
    for alteration in alterations:
        try:
            problem = alteration_problem(alteration)
        except TypeError as exc:  # a name that is not a string
            problem = f"invalid entity: {exc}"
        if problem is not None:
            results.append((ErrorCode.INVALID_REQUEST, problem))
            continue
        results.append((ErrorCode.NONE, None))
        if validate_only:
            continue
        entity = tuple(sorted(alteration.entity, key=lambda p: p[0]))
        current = image.quotas.get(entity, {})
        for key, value in alteration.ops.items():
            if value is None:
                if key in current:
                    records.append(ClientQuota(entity, key, 0.0, remove=True))
            else:
                records.append(ClientQuota(entity, key, float(value)))
    return records, results


def security_operation(op: str, args: dict[str, Any], detail: dict[str, Any]
                       ) -> Callable[[Any], int | None] | None:
    """The controller operation for a security request of the controller listener (None:
    ``op`` is not one), as ``core.cluster.service`` runs them (the node's wiring gives it
    this function); its per-item results go into ``detail`` for the reply. Raises
    KeyError/TypeError/ValueError for malformed args."""
    if op == "create_acls":
        bindings = list(args["bindings"])

        def create(c: Any) -> int | None:
            index, detail["results"] = controller_create_acls(c, bindings)
            return index
        return create
    if op == "delete_acls":
        filters = list(args["filters"])

        def delete(c: Any) -> int | None:
            index, results = controller_delete_acls(c, filters)
            detail["results"] = [[code, message, [b.to_json() for b in matched]]
                                 for code, message, matched in results]
            return index
        return delete
    if op == "alter_scram":
        deletions = [ScramChange.from_json(d) for d in args["deletions"]]
        upserts = [ScramChange.from_json(u) for u in args["upserts"]]
        if any(d.credential is not None for d in deletions) or any(
                u.credential is None for u in upserts):
            raise ValueError("a deletion carries no credential and an upsert one")

        def alter(c: Any) -> int | None:
            index, results = controller_alter_scram_credentials(c, deletions, upserts)
            detail["results"] = {user: list(result) for user, result in results.items()}
            return index
        return alter
    if op == "alter_quotas":
        alterations = [QuotaAlteration(
            tuple((str(t), None if n is None else str(n)) for t, n in a["entity"]),
            {str(k): None if v is None else float(v) for k, v in a["ops"].items()})
            for a in args["alterations"]]
        validate_only = bool(args.get("validate_only", False))

        def quotas(c: Any) -> int | None:
            index, detail["results"] = controller_alter_client_quotas(c, alterations, validate_only)
            return index
        return quotas
    return None


# -- on the active controller (a ``core.cluster.controller.QuorumController``) ------------
# Each decides on the controller's image and appends the records it returns; the index of
# the last record is what the request waits to see committed (None: nothing to commit).

def controller_create_acls(c: Any, bindings: list[dict]) -> tuple[int | None, list]:
    records, results = create_acls(c.image, bindings, c.new_id)
    return c.append_all(records), results


def controller_delete_acls(c: Any, filters: list[dict]) -> tuple[int | None, list]:
    records, results = delete_acls(c.image, filters)
    return c.append_all(records), results


def controller_alter_scram_credentials(c: Any, deletions: list, upserts: list
                                       ) -> tuple[int | None, dict]:
    records, results = alter_scram_credentials(c.image, deletions, upserts)
    return c.append_all(records), results


def controller_alter_client_quotas(c: Any, alterations: list, validate_only: bool
                                   ) -> tuple[int | None, list]:
    records, results = alter_client_quotas(c.image, alterations, validate_only)
    return c.append_all(records), results
