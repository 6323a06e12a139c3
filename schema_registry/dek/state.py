"""``DekState``: the KEKs and DEKs of the DEK Registry's topic, in memory.

Pure data: the store's reader thread applies records in log order, request threads query
(every method holds the lock). A record replaces the key it names; a tombstone removes it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

__all__ = ["Dek", "DekDeletion", "DekState", "Kek", "KekDeletion"]


@dataclass(frozen=True, slots=True)
class Kek:
    """A key encryption key: a reference to a key in a KMS (the registry never sees it)."""

    name: str
    kms_type: str
    kms_key_id: str
    kms_props: dict[str, str] = field(default_factory=dict)
    doc: str | None = None
    shared: bool = False
    deleted: bool = False
    ts: int | None = None

    def equivalent(self, other: Kek) -> bool:
        """Confluent's ``isEquivalent``: the same key, whatever its deleted flag and time."""
        return (self.name, self.kms_type, self.kms_key_id, self.kms_props, self.doc,
                self.shared) == (other.name, other.kms_type, other.kms_key_id,
                                 other.kms_props, other.doc, other.shared)


@dataclass(frozen=True, slots=True)
class Dek:
    """A data encryption key of one subject, encrypted by its KEK (by the client's KMS)."""

    kek_name: str
    subject: str
    algorithm: str
    version: int
    encrypted_key_material: str | None
    deleted: bool = False
    ts: int | None = None

    @property
    def ident(self) -> tuple[str, str, str, int]:
        return self.kek_name, self.subject, self.algorithm, self.version

    def equivalent(self, other: Dek) -> bool:
        return (self.ident, self.encrypted_key_material) == \
            (other.ident, other.encrypted_key_material)


@dataclass(frozen=True, slots=True)
class KekDeletion:
    """The permanent delete of a KEK (a tombstone)."""

    name: str


@dataclass(frozen=True, slots=True)
class DekDeletion:
    """The permanent delete of one DEK version (a tombstone)."""

    kek_name: str
    subject: str
    algorithm: str
    version: int


class DekState:
    """KEKs by name and DEKs by (KEK, subject, algorithm, version), as replayed."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._keks: dict[str, Kek] = {}
        self._deks: dict[tuple[str, str, str, int], Dek] = {}

    def apply(self, record: object) -> None:
        """Apply one record read from the log."""
        with self.lock:
            if isinstance(record, Kek):
                self._keks[record.name] = record
            elif isinstance(record, KekDeletion):
                self._keks.pop(record.name, None)
            elif isinstance(record, Dek):
                self._deks[record.ident] = record
            elif isinstance(record, DekDeletion):
                self._deks.pop((record.kek_name, record.subject, record.algorithm,
                                record.version), None)

    def clear(self) -> None:
        """Forget everything (the topic is being read again from its start)."""
        with self.lock:
            self._keks.clear()
            self._deks.clear()

    def summary(self) -> str:
        with self.lock:
            return f"{len(self._keks)} KEKs, {len(self._deks)} DEKs"

    def kek(self, name: str) -> Kek | None:
        with self.lock:
            return self._keks.get(name)

    def keks(self) -> list[Kek]:
        with self.lock:
            return [self._keks[n] for n in sorted(self._keks)]

    def dek(self, kek_name: str, subject: str, algorithm: str, version: int) -> Dek | None:
        with self.lock:
            return self._deks.get((kek_name, subject, algorithm, version))

    def deks(self, kek_name: str | None = None, subject: str | None = None,
             algorithm: str | None = None) -> list[Dek]:
        """DEKs, optionally of one KEK / subject / algorithm, sorted by key then version."""
        with self.lock:
            return [self._deks[k] for k in sorted(self._deks)
                    if (kek_name is None or k[0] == kek_name)
                    and (subject is None or k[1] == subject)
                    and (algorithm is None or k[2] == algorithm)]
