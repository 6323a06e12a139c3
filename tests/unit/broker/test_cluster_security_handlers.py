"""The security admin handlers of a cluster node, over real frames to an in-process broker
whose ACLs, SCRAM credentials and quotas are the metadata of a one-voter quorum (sans-IO,
on in-memory Raft storage, driven by the broker's own ``submit``, as the controller
listener would): each change is decided by the controller's checks and read back from the
committed image by the Describe APIs, with Kafka's error codes per item.

The caller is ``User:ANONYMOUS``, a super user here, so only the controller refuses.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import InProcessBroker
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeUserScramCredentialsRequest,
)

from core.broker.security.acl import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from core.broker.security.metadata_control import security_operation
from core.broker.security.metadata_store import MetadataSecurityStore
from core.cluster.quorum import MetadataQuorum
from core.cluster.raft.storage import MemoryRaftStorage
from core.protocol.errors import ErrorCode

_NOW = 10_000


class _OneVoter:
    """A one-voter metadata quorum; ``submit`` is ClusterService.submit's contract."""

    def __init__(self) -> None:
        self.quorum = MetadataQuorum(1, [1], MemoryRaftStorage(), now_ms=0,
                                     rng=random.Random(5), election_timeout_ms=100)
        now = 0
        while self.quorum.controller is None and now < _NOW:
            now += 50
            self.quorum.tick(now)
        self.reachable = True

    async def submit(self, op: str, args: dict, timeout_s: float = 10.0) -> dict:
        if not self.reachable:
            return {"error_code": 41}  # NOT_CONTROLLER after the retries
        detail: dict = {}
        try:
            operation = security_operation(op, args, detail)
            index, _, _ = self.quorum.submit(operation, _NOW)
        except (KeyError, TypeError, ValueError) as exc:
            return {"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)}
        self.quorum.tick(_NOW)  # one voter: committed at once
        return {"error_code": 0, "result": {"index": index, **detail}}


@pytest.fixture
def cluster_node(tmp_path: Path) -> Iterator[tuple[InProcessBroker, _OneVoter]]:
    voter = _OneVoter()
    store = MetadataSecurityStore(lambda: voter.quorum.image, lambda: voter.quorum.applied,
                                  voter.submit, lambda: True)
    broker = InProcessBroker(tmp_path, {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS"}, metadata_security=store)
    try:
        yield broker, voter
    finally:
        broker.close()


def call(broker: InProcessBroker, request: object, version: int) -> object:
    with contextlib.closing(broker.client()) as client:
        return client.call(request, version)


def _creation(principal: str, operation: int = AclOperation.READ) -> object:
    return CreateAclsRequest.AclCreation(
        resource_type=ResourceType.TOPIC, resource_name="orders",
        resource_pattern_type=PatternType.LITERAL, principal=principal, host="*",
        operation=operation, permission_type=AclPermissionType.ALLOW)


def test_acls_are_decided_by_the_controller_and_described_from_the_image(cluster_node):
    broker, voter = cluster_node
    created = call(broker, CreateAclsRequest(creations=[
        _creation("User:alice"), _creation("alice"), _creation("User:bob", AclOperation.ANY)]),
        2)
    assert [r.error_code for r in created.results] == [
        ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
    assert len(voter.quorum.image.acls) == 1  # committed to the metadata, not to a file
    assert not (broker.data_dir / "acls.json").exists()
    described = call(broker, DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY, resource_name_filter=None,
        pattern_type_filter=PatternType.ANY, principal_filter=None, host_filter=None,
        operation=AclOperation.ANY, permission_type=AclPermissionType.ANY), 2)
    assert [a.principal for r in described.resources for a in r.acls] == ["User:alice"]

    deleted = call(broker, DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=ResourceType.TOPIC, resource_name_filter=None,
        pattern_type_filter=PatternType.ANY, principal_filter="User:alice", host_filter=None,
        operation=AclOperation.ANY, permission_type=AclPermissionType.ANY)]), 2)
    result = deleted.filter_results[0]
    assert result.error_code == 0 and [a.principal for a in result.matching_acls] == [
        "User:alice"]
    assert voter.quorum.image.acls == {}


def test_an_unreachable_controller_times_the_change_out(cluster_node):
    broker, voter = cluster_node
    voter.reachable = False
    created = call(broker, CreateAclsRequest(creations=[_creation("User:alice"),
                                                        _creation("alice")]), 2)
    assert [r.error_code for r in created.results] == [ErrorCode.REQUEST_TIMED_OUT,
                                                       ErrorCode.INVALID_REQUEST]


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> object:
    return AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
        name=name, mechanism=mechanism, iterations=iterations, salt=b"salt",
        salted_password=b"salted-password-bytes")


def _deletion(name: str, mechanism: int = 1) -> object:
    return AlterUserScramCredentialsRequest.ScramCredentialDeletion(name=name,
                                                                     mechanism=mechanism)


def test_scram_changes_get_the_controllers_error_codes(cluster_node):
    broker, voter = cluster_node
    altered = call(broker, AlterUserScramCredentialsRequest(
        deletions=[_deletion("ghost")],
        upsertions=[_upsert("alice"), _upsert("bob", mechanism=9),
                    _upsert("carol", iterations=20000)]), 0)
    assert {r.user: r.error_code for r in altered.results} == {
        "ghost": ErrorCode.RESOURCE_NOT_FOUND, "alice": ErrorCode.NONE,
        "bob": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "carol": ErrorCode.UNACCEPTABLE_CREDENTIAL}
    stored = voter.quorum.image.scram["alice"]["SCRAM-SHA-256"]
    assert stored.salt == b"salt" and b"salted-password-bytes" not in (
        stored.stored_key, stored.server_key)
    described = call(broker, DescribeUserScramCredentialsRequest(users=None), 0)
    assert [(r.user, [(i.mechanism, i.iterations) for i in r.credential_infos])
            for r in described.results] == [("alice", [(1, 4096)])]
    gone = call(broker, AlterUserScramCredentialsRequest(deletions=[_deletion("alice")],
                                                         upsertions=[]), 0)
    assert gone.results[0].error_code == 0 and voter.quorum.image.scram == {}


def test_quotas_are_decided_by_the_controller_and_enforced_from_the_image(cluster_node):
    broker, voter = cluster_node
    entry = AlterClientQuotasRequest.EntryData
    altered = call(broker, AlterClientQuotasRequest(entries=[
        entry(entity=[entry.EntityData(entity_type="client-id", entity_name="app")],
              ops=[entry.OpData(key="producer_byte_rate", value=1000.0, remove=False)]),
        entry(entity=[entry.EntityData(entity_type="ip", entity_name="1.2.3.4")],
              ops=[entry.OpData(key="connection_creation_rate", value=1.0, remove=False)])],
        validate_only=False), 1)
    assert [e.error_code for e in altered.entries] == [0, ErrorCode.INVALID_REQUEST]
    assert broker.state.quotas.quota_for("u", "app", "producer_byte_rate") == (1000.0,
                                                                               ("", "app"))
    described = call(broker, DescribeClientQuotasRequest(components=[
        DescribeClientQuotasRequest.ComponentData(entity_type="client-id", match_type=0,
                                                  match="app")], strict=False), 1)
    assert [(v.key, v.value) for e in described.entries for v in e.values] == [
        ("producer_byte_rate", 1000.0)]
    assert voter.quorum.image.quotas == {(("client-id", "app"),):
                                         {"producer_byte_rate": 1000.0}}
