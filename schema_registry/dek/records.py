"""The records of the DEK Registry's topic, with the fields of Confluent's DEK Registry.

Keys name one key (compaction keeps the latest record of each); values are the key's state,
a null value deletes it for good::

    KEK  {"tenant":"default","name":"k1","type":"KEK"}
         {"name":"k1","kmsType":"local-kms","kmsKeyId":"...","kmsProps":{},"doc":"...",
          "shared":false,"deleted":false,"type":"KEK","ts":1700000000000}
    DEK  {"tenant":"default","kekName":"k1","subject":"orders-value","algorithm":"AES256_GCM",
          "version":1,"type":"DEK"}
         {"kekName":"k1","subject":"orders-value","algorithm":"AES256_GCM","version":1,
          "encryptedKeyMaterial":"...","deleted":false,"type":"DEK","ts":1700000000000}

``ts`` (when the key was written, epoch milliseconds) is what the REST API reports and what
clients compare with ``encrypt.dek.expiry.days``. Records of other tenants or types are
skipped; so are malformed ones, with a warning from the store.
"""

from __future__ import annotations

import json
from typing import Any

from schema_registry.dek.state import Dek, DekDeletion, Kek, KekDeletion
from schema_registry.records import MalformedRecordError

__all__ = ["DEFAULT_TENANT", "DekRecord", "decode_key_record", "encode_key_record"]

#: Confluent's tenant of a registry without multi-tenancy.
DEFAULT_TENANT = "default"

DekRecord = Kek | Dek | KekDeletion | DekDeletion


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_key_record(record: DekRecord) -> tuple[bytes, bytes | None]:
    """The ``(key, value)`` bytes of a KEK or DEK, or of its deletion (a tombstone)."""
    if isinstance(record, (Kek, KekDeletion)):
        key = _dumps({"tenant": DEFAULT_TENANT, "name": record.name, "type": "KEK"})
        if isinstance(record, KekDeletion):
            return key, None
        value: dict[str, Any] = {"name": record.name, "kmsType": record.kms_type,
                                 "kmsKeyId": record.kms_key_id, "kmsProps": record.kms_props}
        if record.doc is not None:
            value["doc"] = record.doc
        value.update(shared=record.shared, deleted=record.deleted, type="KEK", ts=record.ts)
        return key, _dumps(value)
    if isinstance(record, (Dek, DekDeletion)):
        key = _dumps({"tenant": DEFAULT_TENANT, "kekName": record.kek_name,
                      "subject": record.subject, "algorithm": record.algorithm,
                      "version": record.version, "type": "DEK"})
        if isinstance(record, DekDeletion):
            return key, None
        return key, _dumps({"kekName": record.kek_name, "subject": record.subject,
                            "algorithm": record.algorithm, "version": record.version,
                            "encryptedKeyMaterial": record.encrypted_key_material,
                            "deleted": record.deleted, "type": "DEK", "ts": record.ts})
    raise TypeError(f"not a DEK registry record: {record!r}")


def decode_key_record(key: bytes | None, value: bytes | None) -> DekRecord | None:
    """The record stored as ``key``/``value``; None for another tenant or an unknown type.
    Raises ``MalformedRecordError`` for bytes that are not such a record."""
    k = _load(key, "key")
    if k.get("tenant", DEFAULT_TENANT) != DEFAULT_TENANT:
        return None
    v = None if value is None else _load(value, "value")
    try:
        if k.get("type") == "KEK":
            name = _str(k, "name")
            if v is None:
                return KekDeletion(name)
            props = v.get("kmsProps") or {}
            if not isinstance(props, dict):
                raise MalformedRecordError(f"KEK {name!r} has non-object kmsProps")
            return Kek(name, _str(v, "kmsType"), _str(v, "kmsKeyId"),
                       {str(a): str(b) for a, b in sorted(props.items())},
                       v.get("doc") if isinstance(v.get("doc"), str) else None,
                       v.get("shared") is True, v.get("deleted") is True, _ts(v))
        if k.get("type") == "DEK":
            ident = (_str(k, "kekName"), _str(k, "subject"), _str(k, "algorithm"),
                     _int(k, "version"))
            if v is None:
                return DekDeletion(*ident)
            material = v.get("encryptedKeyMaterial")
            return Dek(*ident, material if isinstance(material, str) else None,
                       v.get("deleted") is True, _ts(v))
    except (KeyError, TypeError) as exc:
        raise MalformedRecordError(f"DEK registry record {key!r}: {exc}") from None
    return None


def _load(raw: bytes | None, what: str) -> dict[str, Any]:
    if raw is None:
        raise MalformedRecordError(f"DEK registry record without a {what}")
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedRecordError(f"{what} {raw[:200]!r} is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedRecordError(f"{what} {raw[:200]!r} is not a JSON object")
    return obj


def _str(obj: dict[str, Any], field: str) -> str:
    value = obj[field]
    if not isinstance(value, str):
        raise TypeError(f"{field} is not a string")
    return value


def _int(obj: dict[str, Any], field: str) -> int:
    value = obj[field]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} is not an integer")
    return value


def _ts(obj: dict[str, Any]) -> int | None:
    ts = obj.get("ts")
    return ts if isinstance(ts, int) and not isinstance(ts, bool) else None
