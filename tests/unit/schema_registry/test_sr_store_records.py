"""The ``_schemas`` records (exact Confluent bytes) and their replay into RegistryState."""

from __future__ import annotations

import json

import pytest

from schema_registry.records import (
    ClearSubjectRecord,
    ConfigRecord,
    DeleteSubjectRecord,
    MalformedRecordError,
    MaxIdRecord,
    ModeRecord,
    NoopRecord,
    SchemaRecord,
    decode_record,
    encode_record,
)
from schema_registry.schemas import Reference
from schema_registry.state import RegistryState

AVRO_A = '{"type":"record","name":"A","fields":[{"name":"f","type":"string"}]}'
AVRO_B = '{"type":"record","name":"B","fields":[{"name":"g","type":"long"}]}'


# ------------------------------------------------------------------------------ encoding


def test_schema_key_and_value_bytes_are_confluents():
    key, value = encode_record(SchemaRecord("orders-value", 3, 7, "AVRO", AVRO_A))
    assert key == b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}'
    assert json.loads(value) == {"subject": "orders-value", "version": 3, "id": 7,
                                 "schema": AVRO_A, "deleted": False}
    assert list(json.loads(value)) == ["subject", "version", "id", "schema", "deleted"]


def test_json_schema_value_names_its_type_and_references():
    ref = Reference("other.json", "other-value", 2)
    _, value = encode_record(SchemaRecord("s", 1, 4, "JSON", '{"type":"object"}', (ref,), True))
    assert list(json.loads(value)) == ["subject", "version", "id", "schemaType", "references",
                                       "schema", "deleted"]
    assert json.loads(value)["references"] == [
        {"name": "other.json", "subject": "other-value", "version": 2}]
    assert json.loads(value)["deleted"] is True


@pytest.mark.parametrize(("record", "key", "value"), [
    (SchemaRecord("s", 2), b'{"keytype":"SCHEMA","subject":"s","version":2,"magic":1}', None),
    (ConfigRecord(None, {"compatibilityLevel": "FULL"}),
     b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"FULL"}'),
    (ConfigRecord("s", None), b'{"keytype":"CONFIG","subject":"s","magic":0}', None),
    (ModeRecord("s", "IMPORT"), b'{"keytype":"MODE","subject":"s","magic":0}',
     b'{"subject":"s","mode":"IMPORT"}'),
    (ModeRecord(None, None), b'{"keytype":"MODE","subject":null,"magic":0}', None),
    (DeleteSubjectRecord("s", 3), b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}',
     b'{"subject":"s","version":3}'),
    (ClearSubjectRecord("s"), b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}',
     b'{"subject":"s"}'),
    (NoopRecord(), b'{"keytype":"NOOP","magic":0}', None),
])
def test_every_key_type_encodes_exactly_and_decodes_back(record, key, value):
    assert encode_record(record) == (key, value)
    assert decode_record(key, value) == record


def test_non_ascii_subjects_are_written_as_utf8_like_jackson():
    key, _ = encode_record(SchemaRecord("zürich/événements", 1, 1, "AVRO", '"string"'))
    assert key == '{"keytype":"SCHEMA","subject":"zürich/événements","version":1,"magic":1}' \
        .encode()


# ------------------------------------------------------------------------------ decoding


def test_decodes_confluent_values_with_any_field_order_and_spacing():
    key = b'{"keytype":"SCHEMA","subject":"wow.first.subject","version":1,"magic":1}'
    value = ('{"deleted": false, "id": 1, "schema": ' + json.dumps(AVRO_A)
             + ', "subject": "wow.first.subject", "version": 1, "md5": "abc", '
               '"metadata": {"properties": {}}}').encode()
    # An empty metadata object is kept (Confluent keeps it too: it is part of the identity).
    assert decode_record(key, value) == SchemaRecord("wow.first.subject", 1, 1, "AVRO", AVRO_A,
                                                     metadata={})


def test_magic_zero_schema_keys_and_missing_deleted_are_accepted():
    record = decode_record(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":0}',
                           b'{"subject":"s","version":1,"id":5,"schema":"\\"int\\""}')
    assert record == SchemaRecord("s", 1, 5, "AVRO", '"int"', (), False)


def test_unknown_key_types_are_skipped():
    assert decode_record(b'{"keytype":"CONTEXT","tenant":"t","context":".","magic":0}',
                         b'{}') is None


@pytest.mark.parametrize(("key", "value"), [
    (b"not json", b"{}"),
    (b'["SCHEMA"]', b"{}"),
    (b'{"keytype":"SCHEMA","subject":"s","magic":1}', b"{}"),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":7}', b"{}"),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', b'{"id":1}'),
    (b'{"keytype":"MODE","subject":null,"magic":0}', b'{"subject":null}'),
    (None, b"{}"),
])
def test_malformed_records_are_reported(key, value):
    with pytest.raises(MalformedRecordError):
        decode_record(key, value)


# ------------------------------------------------------------------------------ replay


def _schema(subject, version, schema_id, text=AVRO_A, deleted=False, refs=()):
    return SchemaRecord(subject, version, schema_id, "AVRO", text, tuple(refs), deleted)


def test_replay_builds_subjects_versions_and_ids():
    state = RegistryState()
    for record in (_schema("a", 1, 1), _schema("a", 2, 2, AVRO_B), _schema("b", 1, 1)):
        state.apply(record)
    assert state.subject_names() == ["a", "b"]
    assert [v.version for v in state.versions("a")] == [1, 2]
    assert state.schema(2).schema == AVRO_B
    assert [(v.subject, v.version) for v in state.users_of(1)] == [("a", 1), ("b", 1)]
    assert state.max_id == 2


def test_soft_delete_then_tombstone_removes_the_schema_but_not_the_max_id():
    state = RegistryState()
    state.apply(_schema("a", 1, 1))
    state.apply(_schema("a", 2, 9, AVRO_B))
    state.apply(_schema("a", 2, 9, AVRO_B, deleted=True))
    assert state.schema(9).schema == AVRO_B  # still served by id after a soft delete
    assert state.fingerprints_of(9)
    assert [v.version for v in state.versions("a")] == [1]
    assert [v.version for v in state.versions("a", deleted=True)] == [1, 2]
    state.apply(SchemaRecord("a", 2))
    assert state.version("a", 2) is None
    assert state.schema(9) is None
    assert state.max_id == 9


def test_delete_subject_soft_deletes_up_to_its_version_only():
    state = RegistryState()
    state.apply(_schema("a", 1, 1))
    state.apply(_schema("a", 2, 2, AVRO_B))
    state.apply(DeleteSubjectRecord("a", 1))
    assert [(v.version, v.deleted) for v in state.versions("a", deleted=True)] == [
        (1, True), (2, False)]


def test_a_different_schema_under_a_used_id_is_ignored():
    state = RegistryState()
    state.apply(_schema("a", 1, 1))
    state.apply(_schema("b", 1, 1, AVRO_B))
    assert state.version("b", 1) is None
    assert state.schema(1).schema == AVRO_A


def test_clear_subject_drops_soft_deleted_versions():
    state = RegistryState()
    state.apply(_schema("a", 1, 1, deleted=True))
    state.apply(_schema("a", 2, 2, AVRO_B))
    state.apply(ClearSubjectRecord("a"))
    assert [v.version for v in state.versions("a", deleted=True)] == [2]


def test_config_and_mode_are_set_and_removed_by_tombstones():
    state = RegistryState()
    state.apply(ConfigRecord(None, {"compatibilityLevel": "FULL"}))
    state.apply(ConfigRecord("a", {"compatibilityLevel": "NONE"}))
    state.apply(ModeRecord(None, "READONLY"))
    assert state.config(None) == {"compatibilityLevel": "FULL"}
    assert state.config("a") == {"compatibilityLevel": "NONE"}
    assert state.mode(None) == "READONLY"
    state.apply(ConfigRecord("a", None))
    state.apply(ModeRecord(None, None))
    assert state.config("a") is None
    assert state.mode(None) is None


def test_identity_is_decided_by_the_parsed_schema_not_the_text():
    state = RegistryState()
    state.apply(_schema("a", 1, 1))
    spaced = json.dumps(json.loads(AVRO_A), indent=2)
    state.apply(_schema("b", 1, 2, spaced))
    assert state.fingerprints_of(1) & state.fingerprints_of(2)
    for fingerprint in state.fingerprints_of(2):
        assert state.id_for_fingerprint(fingerprint) == 1 or fingerprint not in \
            state.fingerprints_of(1)
    assert state.equivalence_of(1) == state.equivalence_of(2)


def test_references_resolve_even_when_the_referenced_version_comes_later():
    state = RegistryState()
    user = ('{"type":"record","name":"Order","fields":[{"name":"u","type":"User"}]}')
    state.apply(_schema("orders", 1, 2, user, refs=[Reference("User", "users", 1)]))
    state.apply(_schema("users", 1, 1, '{"type":"record","name":"User","fields":[]}'))
    assert state.fingerprints_of(2)
    assert state.equivalence_of(2) is not None  # it parsed, with its reference
    assert [v.subject for v in state.referencing("users", 1)] == ["orders"]


def test_the_max_id_marker_is_a_noop_key_of_its_own_and_outlives_compaction():
    key, value = encode_record(MaxIdRecord(7))
    assert (key, value) == (b'{"keytype":"NOOP","magic":1}', b'{"maxId":7}')
    assert key != encode_record(NoopRecord())[0]  # a NOOP tombstone never compacts it away
    assert decode_record(key, value) == MaxIdRecord(7)
    assert decode_record(b'{"keytype":"NOOP","magic":0}', None) == NoopRecord()
    # What compaction leaves after a permanent delete of the highest id: the version's
    # records are gone, the marker written before the tombstone is not.
    state = RegistryState()
    for record in (_schema("a", 1, 1), MaxIdRecord(2)):
        state.apply(record)
    assert state.schema(2) is None and state.max_id == 2
