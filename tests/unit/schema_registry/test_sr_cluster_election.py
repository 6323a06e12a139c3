"""The leader choice every member receives, and the identities it is computed from."""

from __future__ import annotations

import json

from core.backends import GroupMember
from schema_registry.election import DUPLICATE_URLS, Identity, choose_leader


def _member(member_id: str, port: int, eligible: bool = True, host: str = "10.0.0.1"
            ) -> GroupMember:
    return GroupMember(member_id, None, Identity(host, port, "http", eligible).encode())


def test_identity_is_confluents_schema_registry_identity():
    assert json.loads(Identity("sr-1", 8081).encode()) == {
        "version": 1, "host": "sr-1", "port": 8081, "master_eligibility": True,
        "scheme": "http"}
    assert Identity.decode(Identity("::1", 80, "https", False).encode()) == \
        Identity("::1", 80, "https", False)
    assert Identity("::1", 80).url == "http://[::1]:80"


def test_the_smallest_eligible_url_leads_and_everyone_gets_the_same_assignment():
    members = [_member("m-a", 8083), _member("m-b", 8081, eligible=False),
               _member("m-c", 8082)]
    assignments = choose_leader(members)
    assert set(assignments) == {"m-a", "m-b", "m-c"}
    assert len(set(assignments.values())) == 1
    decoded = json.loads(assignments["m-a"])
    assert decoded == {"version": 1, "error": 0, "master": "m-c",
                       "master_identity": json.loads(Identity("10.0.0.1", 8082).encode())}


def test_duplicate_urls_mean_no_leader():
    decoded = json.loads(choose_leader([_member("m-a", 8081), _member("m-b", 8081)])["m-a"])
    assert decoded["error"] == DUPLICATE_URLS
    assert decoded["master"] is None


def test_no_eligible_member_and_unreadable_metadata_mean_no_leader():
    members = [_member("m-a", 8081, eligible=False), GroupMember("m-x", None, b"garbage")]
    decoded = json.loads(choose_leader(members)["m-x"])
    assert (decoded["error"], decoded["master"], decoded["master_identity"]) == (0, None, None)
