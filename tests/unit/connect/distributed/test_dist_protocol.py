"""Kafka Connect's worker group bytes, checked against vectors built by hand from the layouts
in Kafka's ConnectProtocol and IncrementalCooperativeConnectProtocol."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api.errors import ConfigError
from connect.runtime.distributed.protocol import (
    CONNECT_PROTOCOL_TYPE,
    AssignmentError,
    ConnectorsAndTasks,
    ConnectProtocol,
    ConnectProtocolError,
    ExtendedAssignment,
    WorkerMetadata,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    join_protocols,
)
from connect.runtime.herder import ConnectorTaskId


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(text: str) -> bytes:
    raw = text.encode()
    return i16(len(raw)) + raw


def work(connectors=(), tasks=()) -> ConnectorsAndTasks:
    return ConnectorsAndTasks.of(connectors, [ConnectorTaskId(c, t) for c, t in tasks])


URL = "http://w1:8083/"

METADATA_V0 = i16(0) + s(URL) + i64(42)

# Assigned: connector "a" with tasks 0, 1; task 2 of "b" without its connector.
ASSIGNED_ARRAY = i32(2) + s("a") + i32(3) + i32(-1) + i32(0) + i32(1) + s("b") + i32(1) + i32(2)
ASSIGNMENT_HEAD = i16(0) + s("member-1") + s(URL) + i64(42)
ASSIGNMENT_V0 = i16(0) + ASSIGNMENT_HEAD + ASSIGNED_ARRAY
# Revoked: connector "c" only.
REVOKED_ARRAY = i32(1) + s("c") + i32(1) + i32(-1)
ASSIGNMENT_V1 = i16(1) + ASSIGNMENT_HEAD + ASSIGNED_ARRAY + REVOKED_ARRAY + i32(5000)
ASSIGNMENT_V2 = i16(2) + ASSIGNMENT_HEAD + ASSIGNED_ARRAY + REVOKED_ARRAY + i32(5000)


def assignment(version: int) -> ExtendedAssignment:
    return ExtendedAssignment(version, AssignmentError.NONE, "member-1", URL, 42,
                              work(["a"], [("a", 0), ("a", 1), ("b", 2)]),
                              work(["c"]) if version else work(), 5000 if version else 0)


def test_protocol_names_and_versions_are_kafkas():
    assert CONNECT_PROTOCOL_TYPE == "connect"
    assert [(p.value, p.version) for p in ConnectProtocol] == [
        ("default", 0), ("compatible", 1), ("sessioned", 2)]
    assert ConnectProtocol.from_config("eager") is ConnectProtocol.EAGER
    assert ConnectProtocol.from_config(" Sessioned ") is ConnectProtocol.SESSIONED
    with pytest.raises(ConfigError, match=r"configuration connect\.protocol"):
        ConnectProtocol.from_config("cooperative")


def test_metadata_v0_bytes():
    assert encode_metadata(WorkerMetadata(0, URL, 42)) == METADATA_V0
    assert decode_metadata(METADATA_V0) == WorkerMetadata(0, URL, 42, None)


@pytest.mark.parametrize("version", [1, 2])
def test_metadata_v1_v2_without_allocation_has_a_null_allocation(version):
    raw = i16(version) + s(URL) + i64(-1) + i32(-1)
    assert encode_metadata(WorkerMetadata(version, URL, -1)) == raw
    assert decode_metadata(raw) == WorkerMetadata(version, URL, -1, None)


@pytest.mark.parametrize("version, body", [(1, ASSIGNMENT_V1), (2, ASSIGNMENT_V2)])
def test_metadata_v1_v2_carries_the_allocation_with_its_own_version_header(version, body):
    raw = i16(version) + s(URL) + i64(42) + i32(len(body)) + body
    # The allocation is written with the metadata's version whatever it was received as.
    stored = assignment(1)
    assert encode_metadata(WorkerMetadata(version, URL, 42, stored)) == raw
    decoded = decode_metadata(raw)
    assert decoded.allocation == assignment(version)
    assert decoded.current == work(["a"], [("a", 0), ("a", 1), ("b", 2)])


def test_assignment_v0_bytes():
    assert encode_assignment(assignment(0)) == ASSIGNMENT_V0
    assert decode_assignment(ASSIGNMENT_V0) == assignment(0)


@pytest.mark.parametrize("version, raw", [(1, ASSIGNMENT_V1), (2, ASSIGNMENT_V2)])
def test_assignment_v1_v2_bytes(version, raw):
    assert encode_assignment(assignment(version)) == raw
    decoded = decode_assignment(raw)
    assert decoded == assignment(version)
    assert decoded.revoked.connectors == {"c"} and decoded.delay_ms == 5000


def test_connector_entries_are_sorted_with_the_connector_first_then_tasks_ascending():
    a = ExtendedAssignment(1, 0, "l", "u", 0,
                           work(["z", "m"], [("m", 3), ("z", 1), ("m", 0)]), work(), 0)
    expected_array = (i32(2) + s("m") + i32(3) + i32(-1) + i32(0) + i32(3)
                      + s("z") + i32(2) + i32(-1) + i32(1))
    assert encode_assignment(a) == (i16(1) + i16(0) + s("l") + s("u") + i64(0)
                                    + expected_array + i32(0) + i32(0))


def test_config_mismatch_error_round_trips():
    a = ExtendedAssignment(2, AssignmentError.CONFIG_MISMATCH, "l", "u", 7)
    decoded = decode_assignment(encode_assignment(a))
    assert decoded.failed and decoded.error == 1 and decoded.assigned.is_empty()


def test_reader_tolerates_missing_v1_fields_and_null_arrays():
    # A V1 header whose body stops after the assignment (Kafka tolerates missing fields).
    short = i16(1) + ASSIGNMENT_HEAD + ASSIGNED_ARRAY
    decoded = decode_assignment(short)
    assert decoded.revoked.is_empty() and decoded.delay_ms == 0
    nulls = i16(1) + ASSIGNMENT_HEAD + i32(-1) + i32(-1) + i32(0)
    decoded = decode_assignment(nulls)
    assert decoded.assigned.is_empty() and decoded.revoked.is_empty()


def test_newer_versions_trailing_bytes_are_ignored():
    raw = i16(3) + ASSIGNMENT_HEAD + ASSIGNED_ARRAY + REVOKED_ARRAY + i32(1) + b"future"
    assert decode_assignment(raw).assigned == assignment(1).assigned


@pytest.mark.parametrize("raw, problem", [
    (b"", "truncated"),
    (i16(-1) + s(URL) + i64(0), "version -1"),
    (i16(0) + i16(-5), "negative string length"),
    (i16(0) + i16(10) + b"abc", "truncated string"),
    (i16(1) + s(URL) + i64(0) + i32(100) + b"xx", "truncated bytes"),
    (i16(0) + s(URL) + i32(1), "truncated"),
])
def test_malformed_metadata_raises_a_protocol_error(raw, problem):
    with pytest.raises(ConnectProtocolError, match=problem):
        decode_metadata(raw)


def test_malformed_assignment_array_raises():
    raw = i16(1) + ASSIGNMENT_HEAD + i32(1_000_000)
    with pytest.raises(ConnectProtocolError, match="array longer"):
        decode_assignment(raw)


def test_join_protocols_follow_kafkas_preference_order():
    allocation = assignment(2)
    offered = join_protocols(ConnectProtocol.SESSIONED, URL, 42, allocation)
    assert [name for name, _ in offered] == ["sessioned", "compatible", "default"]
    by_name = dict(offered)
    assert by_name["default"] == METADATA_V0
    assert decode_metadata(by_name["sessioned"]).allocation == assignment(2)
    assert decode_metadata(by_name["compatible"]).allocation == assignment(1)
    assert [n for n, _ in join_protocols(ConnectProtocol.COMPATIBLE, URL, 0, None)] == [
        "compatible", "default"]
    assert [n for n, _ in join_protocols(ConnectProtocol.EAGER, URL, 0, None)] == ["default"]


names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                min_size=1, max_size=12)
task_ids = st.builds(ConnectorTaskId, names, st.integers(0, 2**31 - 1))
works = st.builds(ConnectorsAndTasks.of, st.frozensets(names, max_size=5),
                  st.frozensets(task_ids, max_size=8))


@given(version=st.sampled_from([1, 2]), error=st.sampled_from(list(AssignmentError)),
       leader=names, url=names, offset=st.integers(-1, 2**63 - 1), assigned=works,
       revoked=works, delay=st.integers(0, 2**31 - 1))
def test_assignments_round_trip(version, error, leader, url, offset, assigned, revoked, delay):
    a = ExtendedAssignment(version, error, leader, url, offset, assigned, revoked, delay)
    assert decode_assignment(encode_assignment(a)) == a
    meta = WorkerMetadata(version, url, offset, a)
    assert decode_metadata(encode_metadata(meta)) == meta
