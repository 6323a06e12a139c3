"""The cluster's security metadata: the ACL, SCRAM and client-quota records through encode
and decode, their application to the metadata image, the controller's checks (Kafka's
error codes) and the broker-side store that reads the image. A one-voter quorum on
in-memory Raft storage runs the operations as the controller listener does."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from core.broker.security import metadata_control as control
from core.broker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from core.broker.security.authorizer import Authorizer
from core.broker.security.metadata_control import security_operation
from core.broker.security.metadata_store import ControllerRefusal, MetadataSecurityStore
from core.broker.security.quotas import ClientQuotaManager, QuotaAlteration
from core.broker.security.scram import MECHANISMS, ScramCredential
from core.broker.security.scram_changes import ScramChange
from core.cluster.controller import QuorumController
from core.cluster.image import MetadataImage
from core.cluster.quorum import MetadataQuorum, Outcome
from core.cluster.raft.storage import MemoryRaftStorage
from core.cluster.records import (
    AccessControlEntry,
    ClientQuota,
    RecordDecodeError,
    RemoveAccessControlEntry,
    RemoveUserScramCredential,
    UserScramCredential,
    decode,
    decode_batch,
    encode,
    encode_batch,
)
from core.protocol.errors import ErrorCode

SHA256 = MECHANISMS["SCRAM-SHA-256"][1]  # Kafka's mechanism type number
ALICE_READ = AclBinding(ResourcePattern(ResourceType.TOPIC, "orders"), "User:alice", "*",
                        AclOperation.READ, AclPermissionType.ALLOW)
ENTRY = AccessControlEntry("id-1", 2, "orders", 3, "User:alice", "*", 3, 3)
CREDENTIAL = UserScramCredential("alice", "SCRAM-SHA-256", b"\x00salt", b"stored", b"server",
                                 4096)


# -- records --------------------------------------------------------------------------------

@pytest.mark.parametrize("record", [
    ENTRY, RemoveAccessControlEntry("id-1"), CREDENTIAL,
    RemoveUserScramCredential("alice", "SCRAM-SHA-512"),
    ClientQuota((("client-id", None), ("user", "alice")), "producer_byte_rate", 1024.0),
    ClientQuota((("user", None),), "request_percentage", 0.0, remove=True)])
def test_security_records_survive_encode_and_decode(record):
    assert decode(encode(record)) == record
    assert decode_batch(encode_batch([record, record])) == [record, record]


def test_a_scram_record_holds_keys_in_base64_and_no_password():
    body = json.loads(encode(CREDENTIAL))
    assert body["salt"] == "AHNhbHQ=" and body["stored_key"] == "c3RvcmVk"
    assert not {k for k in body if "password" in k}


def test_a_scram_record_with_a_key_that_is_not_base64_is_refused():
    body = json.loads(encode(CREDENTIAL))
    body["server_key"] = "not base64!"
    with pytest.raises(RecordDecodeError):
        decode(json.dumps(body).encode())


# -- the image ------------------------------------------------------------------------------

def test_the_image_adds_and_removes_acls_copy_on_write():
    image = MetadataImage()
    image.apply(1, ENTRY)
    snapshot, version = image.acls, image.acls_version
    image.apply(2, RemoveAccessControlEntry("id-1"))
    assert image.acls == {} and image.acls_version == version + 1
    assert snapshot == {"id-1": ENTRY}  # a reader's snapshot is never changed under it
    image.apply(3, RemoveAccessControlEntry("id-1"))  # nothing to remove: no change
    assert image.acls_version == version + 1


def test_the_image_replaces_and_removes_scram_credentials_per_mechanism():
    image = MetadataImage()
    image.apply(1, CREDENTIAL)
    image.apply(2, UserScramCredential("alice", "SCRAM-SHA-512", b"s", b"k", b"sk", 8192))
    image.apply(3, UserScramCredential("alice", "SCRAM-SHA-256", b"s2", b"k2", b"sk2", 4096))
    assert image.scram["alice"]["SCRAM-SHA-256"].salt == b"s2"
    image.apply(4, RemoveUserScramCredential("alice", "SCRAM-SHA-256"))
    assert set(image.scram["alice"]) == {"SCRAM-SHA-512"}
    image.apply(5, RemoveUserScramCredential("alice", "SCRAM-SHA-512"))
    assert image.scram == {} and image.scram_version == 5


def test_the_image_sets_and_removes_quota_keys_per_entity():
    image = MetadataImage()
    entity = (("user", "alice"),)
    image.apply(1, ClientQuota(entity, "producer_byte_rate", 100.0))
    image.apply(2, ClientQuota(entity, "consumer_byte_rate", 200.0))
    image.apply(3, ClientQuota(entity, "producer_byte_rate", 0.0, remove=True))
    assert image.quotas == {entity: {"consumer_byte_rate": 200.0}}
    image.apply(4, ClientQuota(entity, "consumer_byte_rate", 0.0, remove=True))
    assert image.quotas == {}


# -- the controller ---------------------------------------------------------------------------

class _Log:
    """The metadata log in a list, applied to the controller's image as appended."""

    def __init__(self) -> None:
        self.image = MetadataImage()
        self.records: list[bytes] = []

    def append(self, record) -> int:
        self.records.append(encode(record))
        self.image.apply(len(self.records), decode(self.records[-1]))
        return len(self.records)


@pytest.fixture
def log() -> _Log:
    return _Log()


@pytest.fixture
def controller(log: _Log) -> QuorumController:
    return QuorumController(log.image, log.append, 9000, rng=random.Random(1))


def test_create_acls_refuses_invalid_bindings_and_stores_each_valid_one_once(log, controller):
    bad = {**ALICE_READ.to_json(), "operation": "ANY"}
    noname = {**ALICE_READ.to_json(), "principal": "alice"}
    index, results = control.controller_create_acls(
        controller, [ALICE_READ.to_json(), bad, noname, ALICE_READ.to_json()])
    assert [code for code, _ in results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST,
                                             ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
    assert "principal 'alice'" in results[2][1]
    assert len(log.records) == 1 and index == 1
    again, results = control.controller_create_acls(controller, [ALICE_READ.to_json()])
    assert again is None and results == [(ErrorCode.NONE, None)]  # already there: no record


def test_delete_acls_lists_matches_per_filter_and_removes_each_once(log, controller):
    bob = AclBinding(ResourcePattern(ResourceType.TOPIC, "orders", PatternType.PREFIXED),
                     "User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    control.controller_create_acls(controller, [ALICE_READ.to_json(), bob.to_json()])
    every = AclBindingFilter()
    alice = AclBindingFilter(principal="User:alice")
    unknown = {**every.to_json(), "operation": "UNKNOWN"}
    nothing = AclBindingFilter(principal="User:nobody")
    _, results = control.controller_delete_acls(
        controller, [alice.to_json(), every.to_json(), unknown, nothing.to_json()])
    assert results[0] == (ErrorCode.NONE, None, [ALICE_READ])
    assert sorted(b.principal for b in results[1][2]) == ["User:alice", "User:bob"]
    assert results[2][0] == ErrorCode.INVALID_REQUEST
    assert results[3] == (ErrorCode.NONE, None, [])  # Kafka: matching nothing is no error
    assert log.image.acls == {} and len(log.records) == 4  # two adds, two removals
    assert control.controller_delete_acls(controller, [every.to_json()]) == (
        None, [(ErrorCode.NONE, None, [])])


def _upsert(user: str, mechanism: int = SHA256, iterations: int = 4096) -> ScramChange:
    return ScramChange(user, mechanism, ScramCredential(b"salt", b"stored", b"server",
                                                        iterations))


def test_scram_changes_get_kafkas_error_codes_and_only_good_users_are_committed(log,
                                                                                controller):
    _, results = control.controller_alter_scram_credentials(
        controller, [ScramChange("ghost", SHA256), ScramChange("", SHA256)],
        [_upsert("alice"), _upsert("bob", mechanism=7), _upsert("carol", iterations=100),
         _upsert("dave"), _upsert("dave")])
    assert results == {
        "ghost": (ErrorCode.RESOURCE_NOT_FOUND,
                  "Attempt to delete a user credential that does not exist"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "alice": (ErrorCode.NONE, None),
        "bob": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism 7"),
        "carol": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations: at least 4096"),
        "dave": (ErrorCode.DUPLICATE_RESOURCE,
                 "A user credential cannot be altered twice in the same request")}
    assert set(log.image.scram) == {"alice"}
    stored = log.image.scram["alice"]["SCRAM-SHA-256"]
    assert (stored.salt, stored.stored_key, stored.server_key) == (b"salt", b"stored",
                                                                    b"server")
    _, results = control.controller_alter_scram_credentials(
        controller, [ScramChange("alice", SHA256)], [])
    assert results == {"alice": (ErrorCode.NONE, None)} and log.image.scram == {}


def test_quota_changes_refuse_bad_entries_and_skip_removing_what_is_not_set(log, controller):
    good = QuotaAlteration((("user", "alice"),), {"producer_byte_rate": 1000.0})
    unknown_key = QuotaAlteration((("user", "alice"),), {"bogus": 1.0})
    negative = QuotaAlteration((("client-id", None),), {"consumer_byte_rate": -5.0})
    twice = QuotaAlteration((("user", "a"), ("user", None)), {"producer_byte_rate": 1.0})
    ip = QuotaAlteration((("ip", "1.2.3.4"),), {"connection_creation_rate": 1.0})
    _, results = control.controller_alter_client_quotas(
        controller, [good, unknown_key, negative, twice, ip], validate_only=False)
    assert [code for code, _ in results] == [0] + [ErrorCode.INVALID_REQUEST] * 4
    assert log.image.quotas == {(("user", "alice"),): {"producer_byte_rate": 1000.0}}
    removal = QuotaAlteration((("user", "alice"),), {"consumer_byte_rate": None})
    assert control.controller_alter_client_quotas(
        controller, [removal], validate_only=False)[0] is None
    validate = QuotaAlteration((("user", "bob"),), {"producer_byte_rate": 5.0})
    assert control.controller_alter_client_quotas(controller, [validate], validate_only=True) == (
        None, [(ErrorCode.NONE, None)])
    assert (("user", "bob"),) not in log.image.quotas


# -- through the quorum, as the controller listener runs them ---------------------------------

def _leader() -> MetadataQuorum:
    quorum = MetadataQuorum(1, [1], MemoryRaftStorage(), now_ms=0, rng=random.Random(3),
                            election_timeout_ms=100)
    now = 0
    while quorum.controller is None and now < 5000:
        now += 50
        quorum.tick(now)
    assert quorum.controller is not None
    return quorum


def test_an_operation_that_appends_nothing_waits_for_the_log_end():
    quorum = _leader()
    detail: dict = {}
    operation = security_operation("delete_acls", {"filters": [AclBindingFilter().to_json()]},
                                   detail)
    index, term, _ = quorum.submit(operation, 6000)
    assert index == quorum.raft.last_index and detail["results"] == [[0, None, []]]
    assert quorum.outcome(index, term) == Outcome.COMMITTED


def test_malformed_security_operations_raise_for_invalid_request():
    with pytest.raises(ValueError):
        security_operation("alter_scram", {"deletions": [], "upserts": [
            {"name": "a", "mechanism": 1}]}, {})  # an upsert without a credential
    with pytest.raises(KeyError):
        security_operation("create_acls", {}, {})
    assert security_operation("create_topic", {}, {}) is None


# -- the broker's store over the image ----------------------------------------------------------

def test_the_store_reads_the_image_and_sends_changes_to_the_controller():
    quorum = _leader()
    caught_up = [False]

    async def submit(op, args, timeout_s=10.0):
        detail: dict = {}
        index, _, _ = quorum.submit(security_operation(op, args, detail), 6000)
        quorum.tick(6001)
        return {"error_code": 0, "result": {"index": index, **detail}}

    store = MetadataSecurityStore(lambda: quorum.image, lambda: quorum.applied, submit,
                                  lambda: caught_up[0])
    authorizer = Authorizer(store, super_users=["User:admin"], allow_if_no_acl=True)
    quotas = ClientQuotaManager(store)
    # Not caught up: only super users, even with allow.everyone.if.no.acl.found.
    assert not authorizer.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC,
                                    "orders")
    assert authorizer.authorize("User:admin", "h", AclOperation.READ, ResourceType.TOPIC,
                                "orders")
    caught_up[0] = True
    assert authorizer.authorize("User:bob", "h", AclOperation.READ, ResourceType.TOPIC, "x")

    results = asyncio.run(store.create_acls([ALICE_READ]))
    assert results == [(0, None)] and authorizer.acls() == [ALICE_READ]
    assert not authorizer.authorize("User:bob", "h", AclOperation.READ, ResourceType.TOPIC,
                                    "orders")
    asyncio.run(store.alter_quotas([QuotaAlteration((("client-id", "app"),),
                                                    {"producer_byte_rate": 10.0})], False))
    assert quotas.quota_for("u", "app", "producer_byte_rate") == (10.0, ("", "app"))
    asyncio.run(store.alter_scram([], [_upsert("alice")]))
    assert store.get("alice", "SCRAM-SHA-256").stored_key == b"stored"
    assert store.users() == ["alice"] and store.mechanisms("alice") == {"SCRAM-SHA-256": 4096}
    removed = asyncio.run(store.delete_acls([AclBindingFilter()]))
    assert removed == [(0, None, [ALICE_READ])] and authorizer.acls() == []


def test_the_store_reports_a_refused_or_unreachable_controller():
    async def refused(op, args, timeout_s=10.0):
        return {"error_code": 41}

    store = MetadataSecurityStore(MetadataImage, lambda: 0, refused, lambda: True)
    with pytest.raises(ControllerRefusal) as exc:
        asyncio.run(store.create_acls([ALICE_READ]))
    assert exc.value.code == ErrorCode.REQUEST_TIMED_OUT
