"""The records of the ``_schemas`` topic, byte-compatible with Confluent Schema Registry.

Every change the registry makes is one record in the compacted ``_schemas`` topic. Keys
are compact JSON with Confluent's fixed field order (compaction compares key *bytes*, so a
key written here replaces one written by Confluent's registry and vice versa)::

    SCHEMA          {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
    CONFIG          {"keytype":"CONFIG","subject":"s","magic":0}      (subject null: global)
    MODE            {"keytype":"MODE","subject":"s","magic":0}        (subject null: global)
    DELETE_SUBJECT  {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
    CLEAR_SUBJECT   {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}
    NOOP            {"keytype":"NOOP","magic":0}
    NOOP, magic 1   {"keytype":"NOOP","magic":1}   (Ferry: the highest id ever issued)

Values are JSON objects (see each record class); a null value is a tombstone: the permanent
delete of a schema version, or the removal of a config or mode. Decoding is lenient, as a
topic written by another registry may carry fields or record types this one does not know:
unknown fields are ignored and unknown key types are skipped.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from schema_registry.contracts import parse_metadata, parse_rule_set
from schema_registry.errors import RegistryError
from schema_registry.schemas import Reference

__all__ = [
    "ClearSubjectRecord",
    "ConfigRecord",
    "DeleteSubjectRecord",
    "MalformedRecordError",
    "MaxIdRecord",
    "ModeRecord",
    "NoopRecord",
    "Record",
    "SchemaRecord",
    "decode_record",
    "encode_record",
]

log = logging.getLogger(__name__)

AVRO = "AVRO"


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    """A schema version. ``schema is None`` for a tombstone (permanent delete), in which case
    only ``subject`` and ``version`` are meaningful."""

    subject: str
    version: int
    id: int = -1
    schema_type: str = AVRO
    schema: str | None = None
    references: tuple[Reference, ...] = ()
    deleted: bool = False
    #: Data contracts in normal form (``schema_registry.contracts``); None when absent.
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.schema is None


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A compatibility config; ``subject=None`` is the global one, ``config=None`` removes it.
    ``config`` holds the stored value as is (``compatibilityLevel`` and any other field)."""

    subject: str | None
    config: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ModeRecord:
    """A mode (READWRITE, READONLY, IMPORT ...); ``subject=None`` is the global one,
    ``mode=None`` removes it."""

    subject: str | None
    mode: str | None


@dataclass(frozen=True, slots=True)
class DeleteSubjectRecord:
    """Soft-deletes every version of ``subject`` up to and including ``version``."""

    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class ClearSubjectRecord:
    """Confluent's CLEAR_SUBJECT (written when entering IMPORT mode); it removes the
    subject's soft-deleted versions from view."""

    subject: str


@dataclass(frozen=True, slots=True)
class MaxIdRecord:
    """Ferry's own marker, ``{"maxId": N}`` under the key ``{"keytype":"NOOP","magic":1}``:
    the highest schema id ever issued. A permanent delete tombstones the versions of a
    schema; once compaction has removed their records, nothing else in the topic would
    remember the id, and a restarted registry would issue it again. The leader writes
    this marker before every permanent delete, and compaction keeps its latest value, so
    ids are never reused. Its key is a NOOP key to registries that do not know it (they
    skip NOOP records), with its own bytes so that Confluent's NOOP tombstones never
    compact it away."""

    max_id: int


@dataclass(frozen=True, slots=True)
class NoopRecord:
    """A marker with a null value (Confluent writes one to find the log end)."""


Record = SchemaRecord | ConfigRecord | ModeRecord | DeleteSubjectRecord | ClearSubjectRecord | \
    NoopRecord | MaxIdRecord


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
    """The ``(key, value)`` bytes of ``record``, exactly as Confluent's registry writes them."""
    if isinstance(record, SchemaRecord):
        key = _dumps({"keytype": "SCHEMA", "subject": record.subject,
                      "version": record.version, "magic": 1})
        if record.schema is None:
            return key, None
        value: dict[str, Any] = {"subject": record.subject, "version": record.version,
                                 "id": record.id}
        if record.schema_type != AVRO:
            value["schemaType"] = record.schema_type
        if record.references:
            value["references"] = [r.to_json() for r in record.references]
        if record.metadata is not None:
            value["metadata"] = record.metadata
        if record.rule_set is not None:
            value["ruleSet"] = record.rule_set
        value["schema"] = record.schema
        value["deleted"] = record.deleted
        return key, _dumps(value)
    if isinstance(record, ConfigRecord):
        key = _dumps({"keytype": "CONFIG", "subject": record.subject, "magic": 0})
        return key, None if record.config is None else _dumps(record.config)
    if isinstance(record, ModeRecord):
        key = _dumps({"keytype": "MODE", "subject": record.subject, "magic": 0})
        if record.mode is None:
            return key, None
        return key, _dumps({"subject": record.subject, "mode": record.mode})
    if isinstance(record, DeleteSubjectRecord):
        key = _dumps({"keytype": "DELETE_SUBJECT", "subject": record.subject, "magic": 0})
        return key, _dumps({"subject": record.subject, "version": record.version})
    if isinstance(record, ClearSubjectRecord):
        key = _dumps({"keytype": "CLEAR_SUBJECT", "subject": record.subject, "magic": 0})
        return key, _dumps({"subject": record.subject})
    if isinstance(record, NoopRecord):
        return _dumps({"keytype": "NOOP", "magic": 0}), None
    if isinstance(record, MaxIdRecord):
        return _dumps({"keytype": "NOOP", "magic": 1}), _dumps({"maxId": record.max_id})
    raise TypeError(f"not a _schemas record: {record!r}")


class MalformedRecordError(ValueError):
    """A ``_schemas`` record whose key or value cannot be understood."""


def decode_record(key: bytes | None, value: bytes | None) -> Record | None:
    """The record stored as ``key``/``value``, or None for a key type this registry does
    not use (CONTEXT, ASSOC ...). Raises ``MalformedRecordError`` for bytes that are not a
    registry record at all."""
    if key is None:
        raise MalformedRecordError("record without a key")
    k = _load_object(key, "key")
    keytype = k.get("keytype")
    subject = k.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise MalformedRecordError(f"key {key!r} has a non-string subject")
    v = None if value is None else _load_object(value, "value")
    if keytype == "SCHEMA":
        return _schema_record(k, v, key)
    if keytype == "CONFIG":
        return ConfigRecord(subject, v)
    if keytype == "MODE":
        if v is None:
            return ModeRecord(subject, None)
        mode = v.get("mode")
        if not isinstance(mode, str):
            raise MalformedRecordError(f"MODE value {value!r} has no mode")
        return ModeRecord(subject, mode.upper())
    if keytype == "DELETE_SUBJECT":
        if v is None:  # not written by registries; nothing to apply
            return None
        version = v.get("version")
        subject = v.get("subject", subject)
        if not isinstance(subject, str) or not _is_int(version):
            raise MalformedRecordError(f"DELETE_SUBJECT value {value!r} lacks subject/version")
        return DeleteSubjectRecord(subject, version)
    if keytype == "CLEAR_SUBJECT":
        if v is None:
            return None
        subject = v.get("subject", subject)
        if not isinstance(subject, str):
            raise MalformedRecordError(f"CLEAR_SUBJECT value {value!r} lacks a subject")
        return ClearSubjectRecord(subject)
    if keytype == "NOOP":
        if k.get("magic") == 1 and v is not None and _is_int(v.get("maxId")):
            return MaxIdRecord(v["maxId"])
        return NoopRecord()
    return None


def _schema_record(k: dict[str, Any], v: dict[str, Any] | None, key: bytes) -> SchemaRecord:
    subject, version, magic = k.get("subject"), k.get("version"), k.get("magic", 1)
    if not isinstance(subject, str) or not _is_int(version):
        raise MalformedRecordError(f"SCHEMA key {key!r} lacks subject/version")
    if magic not in (0, 1):
        raise MalformedRecordError(f"SCHEMA key {key!r} has unknown magic byte {magic!r}")
    if v is None:
        return SchemaRecord(subject, version)
    schema_id, schema = v.get("id"), v.get("schema")
    if not _is_int(schema_id) or not isinstance(schema, str):
        raise MalformedRecordError(f"SCHEMA value for {key!r} lacks id/schema")
    schema_type = v.get("schemaType") or AVRO
    if not isinstance(schema_type, str):
        raise MalformedRecordError(f"SCHEMA value for {key!r} has a non-string schemaType")
    refs = v.get("references") or []
    try:
        references = tuple(Reference.from_json(r) for r in refs)
    except Exception as exc:  # the model's SchemaError, or a non-list
        raise MalformedRecordError(f"SCHEMA value for {key!r}: bad references: {exc}") from exc
    metadata = _contract(v.get("metadata"), parse_metadata, key)
    rule_set = _contract(v.get("ruleSet"), parse_rule_set, key)
    return SchemaRecord(
        subject=subject,
        version=version,
        id=schema_id,
        schema_type=schema_type.upper(),
        schema=schema,
        references=references,
        deleted=v.get("deleted") is True,
        metadata=metadata,
        rule_set=rule_set,
    )


def _contract(raw: Any, parse: Any, key: bytes) -> dict[str, Any] | None:
    """A stored ``metadata``/``ruleSet`` in normal form. One this registry would refuse
    (written by another registry) is kept as stored rather than losing the version."""
    try:
        return parse(raw)  # type: ignore[no-any-return]
    except RegistryError as exc:
        if not isinstance(raw, dict):
            raise MalformedRecordError(f"SCHEMA value for {key!r}: {exc.message}") from exc
        log.warning("SCHEMA value for %r: keeping a contract this registry would refuse (%s)",
                    key, exc.message)
        return raw


def _load_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRecordError(f"{what} {raw[:200]!r} is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedRecordError(f"{what} {raw[:200]!r} is not a JSON object")
    return obj


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
