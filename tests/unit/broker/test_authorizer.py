"""The ACL authorizer's decisions, its filters and its store (Kafka's StandardAuthorizer
semantics: deny by default, super users, DENY before ALLOW, implied operations, LITERAL,
PREFIXED and wildcard patterns, wildcard principal and host)."""

from __future__ import annotations

import json

import pytest

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
from core.broker.security.authorizer import Authorizer, parse_super_users
from core.broker.security.store import FileSecurityStore, SecurityStoreError

Op, R, P = AclOperation, ResourceType, PatternType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.5"


def acl(rt: R, name: str, principal: str, op: Op, perm: AclPermissionType = ALLOW,
        pattern: P = P.LITERAL, host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(rt, name, pattern), principal, host, op, perm)


@pytest.fixture
def store(tmp_path):
    return FileSecurityStore(tmp_path)


def _fresh(store: FileSecurityStore) -> FileSecurityStore:
    """A second, empty store next to ``store``."""
    other = store.data_dir / "other"
    other.mkdir(exist_ok=True)
    return FileSecurityStore(other)


def make(store, *acls, **kw) -> Authorizer:
    a = Authorizer(store, **kw)
    a.create(list(acls))
    return a


def test_deny_by_default_and_allow_everyone_if_no_acl_found(store):
    a = make(store)
    assert not a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")
    open_ = Authorizer(store, allow_if_no_acl=True)
    assert open_.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")
    # Once any ACL applies to the resource, the flag no longer opens it.
    open_.create([acl(R.TOPIC, "t", BOB, Op.READ)])
    assert not open_.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")
    assert open_.authorize(ALICE, HOST, Op.READ, R.TOPIC, "other")


def test_super_users_are_allowed_everything_even_when_denied(store):
    a = make(store, acl(R.TOPIC, "*", ALICE, Op.ALL, DENY),
             super_users=parse_super_users("User:alice; User:ops"))
    assert a.authorize(ALICE, HOST, Op.DELETE, R.TOPIC, "t")
    assert a.authorize("User:ops", HOST, Op.ALTER, R.CLUSTER, "kafka-cluster")
    assert not a.authorize(BOB, HOST, Op.READ, R.TOPIC, "t")
    with pytest.raises(ValueError):
        parse_super_users("alice")


def test_deny_wins_over_allow_and_denies_only_its_operation(store):
    a = make(store, acl(R.TOPIC, "t", ALICE, Op.ALL), acl(R.TOPIC, "t", ALICE, Op.WRITE, DENY))
    assert not a.authorize(ALICE, HOST, Op.WRITE, R.TOPIC, "t")
    assert a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")
    # A DENY of READ does not deny DESCRIBE (implication works for ALLOW only).
    b = make(_fresh(store), acl(R.TOPIC, "u", BOB, Op.DESCRIBE),
             acl(R.TOPIC, "u", BOB, Op.READ, DENY))
    assert b.authorize(BOB, HOST, Op.DESCRIBE, R.TOPIC, "u")
    assert not b.authorize(BOB, HOST, Op.READ, R.TOPIC, "u")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_operations_that_imply_describe(store, granted):
    a = make(store, acl(R.TOPIC, "t", ALICE, granted))
    assert a.authorize(ALICE, HOST, Op.DESCRIBE, R.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.DESCRIBE_CONFIGS, R.TOPIC, "t")


def test_alter_configs_implies_describe_configs_only(store):
    a = make(store, acl(R.TOPIC, "t", ALICE, Op.ALTER_CONFIGS))
    assert a.authorize(ALICE, HOST, Op.DESCRIBE_CONFIGS, R.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.DESCRIBE, R.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.ALTER, R.TOPIC, "t")


def test_create_does_not_imply_describe(store):
    a = make(store, acl(R.TOPIC, "t", ALICE, Op.CREATE))
    assert not a.authorize(ALICE, HOST, Op.DESCRIBE, R.TOPIC, "t")


def test_literal_prefixed_and_wildcard_patterns(store):
    a = make(store, acl(R.TOPIC, "acme.", ALICE, Op.READ, pattern=P.PREFIXED),
             acl(R.GROUP, "*", ALICE, Op.READ), acl(R.TOPIC, "exact", BOB, Op.WRITE))
    assert a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "acme.orders")
    assert not a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "acme")
    assert not a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "other.acme.orders")
    assert a.authorize(ALICE, HOST, Op.READ, R.GROUP, "any-group")
    assert not a.authorize(ALICE, HOST, Op.READ, R.TRANSACTIONAL_ID, "any-group")
    assert a.authorize(BOB, HOST, Op.WRITE, R.TOPIC, "exact")
    assert not a.authorize(BOB, HOST, Op.WRITE, R.TOPIC, "exact2")
    # A literal "*" name is a wildcard; a prefixed "*" is an ordinary prefix.
    b = Authorizer(_fresh(store))
    b.create([acl(R.TOPIC, "*", BOB, Op.READ, pattern=P.PREFIXED)])
    assert not b.authorize(BOB, HOST, Op.READ, R.TOPIC, "t")


def test_wildcard_principal_and_host(store):
    a = make(store, acl(R.TOPIC, "t", "User:*", Op.READ),
             acl(R.TOPIC, "h", ALICE, Op.READ, host="10.0.0.9"))
    assert a.authorize(BOB, HOST, Op.READ, R.TOPIC, "t")
    assert a.authorize("User:ANONYMOUS", "127.0.0.1", Op.READ, R.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "h")
    assert a.authorize(ALICE, "10.0.0.9", Op.READ, R.TOPIC, "h")


def test_authorized_operations_and_any_allowed(store):
    a = make(store, acl(R.TOPIC, "t", ALICE, Op.WRITE), acl(R.TOPIC, "t", ALICE, Op.ALTER_CONFIGS))
    ops = a.authorized_operations(ALICE, HOST, R.TOPIC, "t",
                                  [Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.DELETE])
    assert ops == {Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS}
    assert a.any_allowed(ALICE, HOST, Op.WRITE, R.TOPIC)
    assert not a.any_allowed(BOB, HOST, Op.WRITE, R.TOPIC)
    a.create([acl(R.TOPIC, "*", ALICE, Op.WRITE, DENY)])
    assert not a.any_allowed(ALICE, HOST, Op.WRITE, R.TOPIC)


def test_filters_describe_and_delete(store):
    a = make(store, acl(R.TOPIC, "acme.", ALICE, Op.READ, pattern=P.PREFIXED),
             acl(R.TOPIC, "acme.orders", BOB, Op.WRITE), acl(R.GROUP, "g", ALICE, Op.READ),
             acl(R.TOPIC, "*", "User:*", Op.DESCRIBE))
    assert len(a.acls(AclBindingFilter())) == 4
    assert len(a.acls(AclBindingFilter(resource_type=R.TOPIC))) == 3
    assert len(a.acls(AclBindingFilter(principal=ALICE))) == 2
    # MATCH: every pattern that applies to the name (prefixed, literal, wildcard).
    match = a.acls(AclBindingFilter(R.TOPIC, "acme.orders", P.MATCH))
    assert {b.principal for b in match} == {ALICE, BOB, "User:*"}
    assert len(a.acls(AclBindingFilter(R.TOPIC, "acme.orders", P.LITERAL))) == 1
    removed = a.delete([AclBindingFilter(R.TOPIC, pattern_type=P.PREFIXED),
                        AclBindingFilter(R.GROUP, "nope")])
    assert [len(r) for r in removed] == [1, 0]
    assert not a.authorize(ALICE, HOST, Op.READ, R.TOPIC, "acme.x")
    with pytest.raises(InvalidAclError):
        AclBindingFilter(operation=Op.UNKNOWN).validate()


@pytest.mark.parametrize("binding", [
    acl(R.ANY, "t", ALICE, Op.READ),
    acl(R.TOPIC, "t", ALICE, Op.READ, pattern=P.MATCH),
    acl(R.TOPIC, "", ALICE, Op.READ),
    acl(R.CLUSTER, "other", ALICE, Op.ALTER),
    acl(R.TOPIC, "t", "alice", Op.READ),
    acl(R.TOPIC, "t", ALICE, Op.ANY),
    acl(R.TOPIC, "t", ALICE, Op.READ, AclPermissionType.ANY),
])
def test_invalid_bindings_are_refused(binding):
    with pytest.raises(InvalidAclError):
        binding.validate()


def test_acls_survive_a_restart_and_a_damaged_store_is_an_error(store):
    a = make(store, acl(R.TOPIC, "acme.", ALICE, Op.WRITE, pattern=P.PREFIXED))
    again = Authorizer(FileSecurityStore(store.data_dir))
    assert again.acls() == a.acls()
    assert again.authorize(ALICE, HOST, Op.WRITE, R.TOPIC, "acme.t")
    (store.data_dir / "acls.json").write_text(json.dumps({"version": 1, "entries": [{}]}))
    with pytest.raises(SecurityStoreError, match=r"acls\.json"):
        Authorizer(FileSecurityStore(store.data_dir))
