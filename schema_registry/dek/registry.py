"""``DekRegistry``: the operations of Confluent's DEK Registry over ``DekState``.

Reads answer from the state. Writes run on the registry leader only (the REST layer routes
them through the ``WriteRouter``, as schema writes are), first read the topic to its end
(Confluent's ``syncStore``), then write one record and return once it has been read back.

What Ferry's registry does not do: it holds no KMS credentials, so it never generates,
wraps or unwraps key material. A DEK is registered with the ``encryptedKeyMaterial`` the
client made with its own KMS (Confluent's behaviour for a KEK with ``shared=false``, what
clients use by default). Registering a DEK without key material, which asks the registry
to generate one with a shared KEK, is refused with 42271 saying so; a shared KEK's DEKs are
returned without ``keyMaterial``, and clients then unwrap them with their own KMS access.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from schema_registry.dek.errors import (
    InvalidKeyError,
    KeyExistsError,
    KeyNotFoundError,
    KeyNotSoftDeletedError,
    KeyReferenceExistsError,
    KeySoftDeletedError,
)
from schema_registry.dek.records import DekRecord
from schema_registry.dek.state import Dek, DekDeletion, DekState, Kek, KekDeletion
from schema_registry.dek.store import DekStore

__all__ = ["ALGORITHMS", "LATEST", "DekRegistry"]

log = logging.getLogger(__name__)

#: Confluent's ``DekFormat`` values; AES256_GCM is the default.
ALGORITHMS = ("AES128_GCM", "AES256_GCM", "AES256_SIV")
DEFAULT_ALGORITHM = "AES256_GCM"
#: The version spec meaning "the newest version".
LATEST = -1
_NAME_MAX_LENGTH = 256


def check_name(name: Any, field: str = "name") -> str:
    """Confluent's ``checkName``: a letter or ``_``, then letters, digits, ``_`` or ``-``."""
    if not isinstance(name, str) or not name or len(name) > _NAME_MAX_LENGTH or \
            not (name[0].isalpha() or name[0] == "_") or \
            not all(c.isalnum() or c in "_-" for c in name[1:]):
        raise InvalidKeyError(field)
    return name


def check_dek_subject(subject: Any) -> str:
    if not isinstance(subject, str) or not subject or \
            any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in subject):
        raise InvalidKeyError("subject")
    return subject


def parse_algorithm(text: str | None) -> str:
    """A query's ``algorithm`` (default AES256_GCM). Confluent's Python client sends its
    enum's ``str()``, e.g. ``DekAlgorithm.AES256_GCM``, so that prefix is accepted too."""
    if not text:
        return DEFAULT_ALGORITHM
    name = text.rsplit(".", 1)[-1].upper()
    if name not in ALGORITHMS:
        raise InvalidKeyError("algorithm", f"{text!r} is not one of {', '.join(ALGORITHMS)}")
    return name


def _normalize_kms_type(kms_type: str) -> str:
    lowered = kms_type.lower()
    for prefix, name in (("aws", "aws-kms"), ("azure", "azure-kms"), ("gcp", "gcp-kms")):
        if lowered.startswith(prefix):
            return name
    return kms_type


def _now_ms() -> int:
    return int(time.time() * 1000)


class DekRegistry:
    """KEK and DEK operations. See the module docstring."""

    def __init__(self, state: DekState, store: DekStore) -> None:
        self.state = state
        self.store = store

    # ================================================================== reads

    def kek_names(self, subject_prefixes: Sequence[str] = (), *, deleted: bool = False
                  ) -> list[str]:
        """KEK names, or with ``subject_prefixes`` those with a DEK of a matching subject."""
        if not subject_prefixes:
            return [k.name for k in self.state.keks() if deleted or not k.deleted]
        return sorted({d.kek_name for d in self.state.deks() if (deleted or not d.deleted)
                       and any(d.subject.startswith(p) for p in subject_prefixes)})

    def get_kek(self, name: str, *, deleted: bool = False) -> Kek:
        kek = self.state.kek(check_name(name))
        if kek is None or (kek.deleted and not deleted):
            raise KeyNotFoundError(name)
        return kek

    def dek_subjects(self, kek_name: str, *, deleted: bool = False) -> list[str]:
        self.get_kek(kek_name, deleted=deleted)
        return sorted({d.subject for d in self.state.deks(kek_name) if deleted or not d.deleted})

    def dek_versions(self, kek_name: str, subject: str, algorithm: str | None, *,
                     deleted: bool = False) -> list[int]:
        self.get_kek(kek_name, deleted=deleted)
        return [d.version for d in self._deks(kek_name, subject, algorithm, deleted)]

    def get_dek(self, kek_name: str, subject: str, version: int, algorithm: str | None, *,
                deleted: bool = False) -> Dek:
        """One DEK version (``LATEST``: the newest); 40470 naming the KEK or the subject."""
        self.get_kek(kek_name, deleted=deleted)
        dek = self._find_dek(kek_name, subject, version, algorithm, deleted)
        if dek is None:
            raise KeyNotFoundError(subject)
        return dek

    def _deks(self, kek_name: str, subject: str, algorithm: str | None,
              deleted: bool) -> list[Dek]:
        check_dek_subject(subject)
        return [d for d in self.state.deks(kek_name, subject, parse_algorithm(algorithm))
                if deleted or not d.deleted]

    def _find_dek(self, kek_name: str, subject: str, version: int, algorithm: str | None,
                  deleted: bool) -> Dek | None:
        if version == LATEST:
            deks = self._deks(kek_name, subject, algorithm, deleted)
            return deks[-1] if deks else None
        dek = self.state.dek(kek_name, check_dek_subject(subject), parse_algorithm(algorithm),
                             version)
        return dek if dek is not None and (deleted or not dek.deleted) else None

    # ================================================================== writes (leader)

    def create_kek(self, body: Any) -> Kek:
        """POST /keks: register a KEK (a create of a soft-deleted, equal KEK undeletes it)."""
        if not isinstance(body, dict):
            raise InvalidKeyError("name", "the request body must be a JSON object")
        name = check_name(body.get("name"))
        kms_key_id, kms_type = body.get("kmsKeyId"), body.get("kmsType")
        if not isinstance(kms_key_id, str) or not kms_key_id:
            raise InvalidKeyError("kmsKeyId")
        if not isinstance(kms_type, str) or not kms_type:
            raise InvalidKeyError("kmsType")
        kek = Kek(name, _normalize_kms_type(kms_type), kms_key_id,
                  _kms_props(body.get("kmsProps")), _doc(body.get("doc")),
                  _flag(body, "shared"), _flag(body, "deleted"))
        self.store.sync()
        old = self.state.kek(name)
        if old is not None and (old.deleted == kek.deleted or not old.equivalent(kek)):
            raise KeyExistsError(name)
        return self._put(kek)  # type: ignore[return-value]

    def update_kek(self, name: str, body: Any) -> Kek:
        """PUT /keks/{name}: change ``kmsProps``, ``doc`` or ``shared`` of a live KEK."""
        check_name(name)
        if not isinstance(body, dict):
            raise InvalidKeyError("name", "the request body must be a JSON object")
        self.store.sync()
        old = self.state.kek(name)
        if old is None or old.deleted:
            raise KeyNotFoundError(name)
        new = Kek(name, old.kms_type, old.kms_key_id,
                  _kms_props(body["kmsProps"]) if "kmsProps" in body else old.kms_props,
                  _doc(body["doc"]) if "doc" in body else old.doc,
                  _flag(body, "shared") if body.get("shared") is not None else old.shared)
        return old if new.equivalent(old) else self._put(new)  # type: ignore[return-value]

    def delete_kek(self, name: str, *, permanent: bool = False) -> None:
        """Soft-delete a KEK, or remove a soft-deleted one for good; refused (42272) while
        DEKs use it (live ones, or any for a permanent delete)."""
        self.get_kek(name, deleted=True)
        self.store.sync()
        old = self.state.kek(name)
        if old is None:
            return
        if any(permanent or not d.deleted for d in self.state.deks(name)):
            raise KeyReferenceExistsError(name)
        if permanent:
            if not old.deleted:
                raise KeyNotSoftDeletedError(name)
            self._write([KekDeletion(name)])
        elif not old.deleted:
            self._put(_with(old, deleted=True))

    def undelete_kek(self, name: str) -> None:
        self.get_kek(name, deleted=True)
        self.store.sync()
        old = self.state.kek(name)
        if old is not None and old.deleted:
            self._put(_with(old, deleted=False))

    def create_dek(self, kek_name: str, subject: str | None, body: Any) -> Dek:
        """POST /keks/{name}/deks[/{subject}]: register a DEK version with the key material
        the client encrypted with the KEK."""
        if not isinstance(body, dict):
            raise InvalidKeyError("subject", "the request body must be a JSON object")
        subject = check_dek_subject(subject if subject is not None else body.get("subject"))
        deleted = _flag(body, "deleted")
        kek = self.get_kek(kek_name, deleted=deleted)
        algorithm = parse_algorithm(body.get("algorithm"))
        version = body.get("version")
        if version is None:
            version = 1
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidKeyError("version", f"{version!r} is not a version number (1 or more)")
        material = body.get("encryptedKeyMaterial")
        if material is not None and not isinstance(material, str):
            raise InvalidKeyError("encryptedKeyMaterial")
        dek = Dek(kek.name, subject, algorithm, version, material, deleted)
        self.store.sync()
        old = self.state.dek(kek.name, subject, algorithm, version)
        if old is not None and (old.deleted == dek.deleted or not old.equivalent(dek)):
            raise KeyExistsError(subject)
        if material is None:
            raise InvalidKeyError(
                "encryptedKeyMaterial",
                "this registry has no KMS access and cannot generate DEKs for a shared KEK; "
                "send the key material encrypted by the client" if kek.shared else "")
        return self._put(dek)  # type: ignore[return-value]

    def delete_deks(self, kek_name: str, subject: str, algorithm: str | None, *,
                    permanent: bool = False) -> None:
        """Soft-delete every version of a DEK, or remove the soft-deleted ones for good."""
        self.get_kek(kek_name, deleted=True)
        if not self._deks(kek_name, subject, algorithm, True):
            raise KeyNotFoundError(subject)
        self.store.sync()
        deks = self._deks(kek_name, subject, algorithm, permanent)
        if permanent:
            if any(not d.deleted for d in deks):
                raise KeyNotSoftDeletedError(subject)
            self._write([DekDeletion(*d.ident) for d in deks])
        else:
            self._write([_with(d, deleted=True) for d in deks if not d.deleted])

    def delete_dek_version(self, kek_name: str, subject: str, version: int,
                           algorithm: str | None, *, permanent: bool = False) -> None:
        self.get_dek(kek_name, subject, version, algorithm, deleted=True)
        self.store.sync()
        dek = self._find_dek(kek_name, subject, version, algorithm, True)
        if dek is None:
            return
        if permanent:
            if not dek.deleted:
                raise KeyNotSoftDeletedError(subject)
            self._write([DekDeletion(*dek.ident)])
        elif not dek.deleted:
            self._put(_with(dek, deleted=True))

    def undelete_deks(self, kek_name: str, subject: str, algorithm: str | None) -> None:
        kek = self.get_kek(kek_name, deleted=True)
        if not self._deks(kek_name, subject, algorithm, True):
            raise KeyNotFoundError(subject)
        if kek.deleted:
            raise KeySoftDeletedError(kek_name)
        self.store.sync()
        self._write([_with(d, deleted=False) for d in self._deks(kek_name, subject, algorithm,
                                                                  True) if d.deleted])

    def undelete_dek_version(self, kek_name: str, subject: str, version: int,
                             algorithm: str | None) -> None:
        kek = self.get_kek(kek_name, deleted=True)
        self.get_dek(kek_name, subject, version, algorithm, deleted=True)
        if kek.deleted:
            raise KeySoftDeletedError(kek_name)
        self.store.sync()
        dek = self._find_dek(kek_name, subject, version, algorithm, True)
        if dek is not None and dek.deleted:
            self._put(_with(dek, deleted=False))

    # ================================================================== helpers

    def _put(self, key: Kek | Dek) -> Kek | Dek:
        """Write ``key`` stamped with the time and return it as read back."""
        stamped = _with(key, ts=_now_ms())
        self._write([stamped])
        if isinstance(stamped, Kek):
            stored: Kek | Dek | None = self.state.kek(stamped.name)
        else:
            stored = self.state.dek(*stamped.ident)
        return stored if stored is not None else stamped

    def _write(self, records: Sequence[DekRecord]) -> None:
        if records:
            self.store.write(list(records))  # type: ignore[arg-type]
            log.info("DEK registry wrote %s", ", ".join(_describe(r) for r in records))


def _with(key: Any, **changes: Any) -> Any:
    return replace(key, **changes)


def _describe(record: DekRecord) -> str:
    if isinstance(record, (Kek, KekDeletion)):
        what = "deleted" if isinstance(record, KekDeletion) else \
            ("soft-deleted" if record.deleted else "live")
        return f"KEK {record.name} ({what})"
    what = "deleted" if isinstance(record, DekDeletion) else \
        ("soft-deleted" if record.deleted else "live")
    return f"DEK {record.kek_name}/{record.subject}/{record.algorithm}/v{record.version} ({what})"


def _kms_props(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        raise InvalidKeyError("kmsProps", "expected an object of strings")
    return dict(sorted(raw.items()))


def _doc(raw: Any) -> str | None:
    if raw is not None and not isinstance(raw, str):
        raise InvalidKeyError("doc")
    return raw


def _flag(body: Mapping[str, Any], field: str) -> bool:
    value = body.get(field)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidKeyError(field, "expected true or false")
    return value
