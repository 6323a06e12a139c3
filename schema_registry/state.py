"""``RegistryState``: what the ``_schemas`` topic says, in memory, rebuilt by replaying it.

Pure data, no I/O: the store's reader thread calls ``apply(record)`` for each record in log
order, request threads query. Every method takes the state's lock, so a query never sees
half of a record applied; callers that need several queries to agree hold ``state.lock``
(an ``RLock``) around them.

Replay rules (Confluent's ``KafkaStoreMessageHandler``):

* a SCHEMA record sets one subject version; with ``deleted: true`` it is soft-deleted;
  a null value (tombstone) removes the version for good;
* a SCHEMA record whose id is already used by a *different* schema is ignored (and logged),
  so a log with a duplicated id never serves two schemas under one id;
* DELETE_SUBJECT soft-deletes every version up to the one it names; CLEAR_SUBJECT drops
  the subject's soft-deleted versions; CONFIG and MODE set or (null) remove a setting;
* the highest id ever seen is remembered, including ids whose versions were deleted, so a
  new id is always ``max_id + 1`` and never reuses one.

Schemas are parsed lazily (the first time a fingerprint or a compatibility check needs
them), because a reference may point at a version whose record comes later in a compacted
log; by the time anyone asks, the whole topic has been read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from schema_registry.contracts import contract_fingerprint, schema_guid
from schema_registry.records import (
    ClearSubjectRecord,
    ConfigRecord,
    DeleteSubjectRecord,
    MaxIdRecord,
    ModeRecord,
    NoopRecord,
    Record,
    SchemaRecord,
)
from schema_registry.schemas import (
    ParsedSchema,
    Reference,
    SchemaError,
    UnresolvedReferenceError,
    parse_schema,
)
from schema_registry.schemas.base import identity_digest

__all__ = ["RegistryState", "SchemaEntry", "VersionEntry"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchemaEntry:
    """The schema behind one id: its type, text (as stored) and references."""

    id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None

    @property
    def guid(self) -> str:
        """Confluent's guid of this schema (text, references, metadata, rule set)."""
        return schema_guid(self.schema, self.references, self.metadata, self.rule_set)


@dataclass(frozen=True, slots=True)
class VersionEntry:
    """One version of a subject."""

    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    deleted: bool = False
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None

    @property
    def guid(self) -> str:
        """Confluent's guid of this version's schema (the same for every version of an id)."""
        return schema_guid(self.schema, self.references, self.metadata, self.rule_set)


class RegistryState:
    """Subjects, versions, schemas by id, configs and modes, as replayed from the log."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self._subjects: dict[str, dict[int, VersionEntry]] = {}
        self._schemas: dict[int, SchemaEntry] = {}
        self._users: dict[int, set[tuple[str, int]]] = {}  # id -> versions that use it
        self._configs: dict[str | None, dict[str, Any]] = {}
        self._modes: dict[str | None, str] = {}
        self._max_id = 0
        self._parsed: dict[int, ParsedSchema] = {}
        self._fingerprints: dict[int, frozenset[str]] = {}
        self._ids_by_fingerprint: dict[str, int] = {}
        self._unindexed: set[int] = set()
        self._ids_by_guid: dict[str, int] = {}

    # ------------------------------------------------------------------ replay

    def apply(self, record: Record) -> None:
        """Apply one record read from the log."""
        with self.lock:
            if isinstance(record, SchemaRecord):
                if record.is_tombstone:
                    self._remove_version(record.subject, record.version)
                else:
                    self._put_version(record)
            elif isinstance(record, ConfigRecord):
                if record.config is None:
                    self._configs.pop(record.subject, None)
                else:
                    self._configs[record.subject] = dict(record.config)
            elif isinstance(record, ModeRecord):
                if record.mode is None:
                    self._modes.pop(record.subject, None)
                else:
                    self._modes[record.subject] = record.mode
            elif isinstance(record, DeleteSubjectRecord):
                versions = self._subjects.get(record.subject, {})
                for number, entry in versions.items():
                    if number <= record.version and not entry.deleted:
                        versions[number] = replace(entry, deleted=True)
            elif isinstance(record, ClearSubjectRecord):
                for number, entry in list(self._subjects.get(record.subject, {}).items()):
                    if entry.deleted:
                        self._remove_version(record.subject, number)
            elif isinstance(record, MaxIdRecord):
                self._max_id = max(self._max_id, record.max_id)
            elif isinstance(record, NoopRecord):
                pass

    def clear(self) -> None:
        """Forget everything (the topic is being read again from its start)."""
        with self.lock:
            self._reset()

    def _put_version(self, record: SchemaRecord) -> None:
        assert record.schema is not None
        existing = self._schemas.get(record.id)
        if existing is not None and (existing.schema_type, existing.schema,
                                     existing.references, existing.metadata,
                                     existing.rule_set) != (record.schema_type,
                                                            record.schema,
                                                            record.references,
                                                            record.metadata,
                                                            record.rule_set):
            log.error("ignoring schema %s version %d: id %d is already used by a different "
                      "schema", record.subject, record.version, record.id)
            return
        # A rewrite of the same version (a soft delete) may drop the id's last user here;
        # the id is then known again just below.
        self._remove_version(record.subject, record.version)
        self._subjects.setdefault(record.subject, {})[record.version] = VersionEntry(
            record.subject, record.version, record.id, record.schema_type, record.schema,
            record.references, record.deleted, record.metadata, record.rule_set)
        if record.id not in self._schemas:
            entry = SchemaEntry(record.id, record.schema_type, record.schema,
                                record.references, record.metadata, record.rule_set)
            self._schemas[record.id] = entry
            self._ids_by_guid.setdefault(entry.guid, record.id)
            self._unindexed.add(record.id)
        self._users.setdefault(record.id, set()).add((record.subject, record.version))
        self._max_id = max(self._max_id, record.id)

    def _remove_version(self, subject: str, version: int) -> None:
        versions = self._subjects.get(subject)
        if versions is None:
            return
        entry = versions.pop(version, None)
        if not versions:
            del self._subjects[subject]
        if entry is None:
            return
        users = self._users.get(entry.id)
        if users is not None:
            users.discard((subject, version))
            if not users:
                self._forget_schema(entry.id)

    def _forget_schema(self, schema_id: int) -> None:
        del self._users[schema_id]
        forgotten = self._schemas.pop(schema_id, None)
        if forgotten is not None and self._ids_by_guid.get(forgotten.guid) == schema_id:
            del self._ids_by_guid[forgotten.guid]
        self._parsed.pop(schema_id, None)
        self._unindexed.discard(schema_id)
        for fingerprint in self._fingerprints.pop(schema_id, frozenset()):
            if self._ids_by_fingerprint.get(fingerprint) != schema_id:
                continue
            del self._ids_by_fingerprint[fingerprint]
            others = [other for other, prints in self._fingerprints.items()
                      if fingerprint in prints]  # another id, same schema
            if others:
                self._ids_by_fingerprint[fingerprint] = min(others)

    # ------------------------------------------------------------------ subjects and versions

    @property
    def max_id(self) -> int:
        """The highest schema id ever seen in the log (0 if none)."""
        with self.lock:
            return self._max_id

    def subject_names(self) -> list[str]:
        """Every subject with at least one version (soft-deleted or not), sorted."""
        with self.lock:
            return sorted(self._subjects)

    def versions(self, subject: str, *, deleted: bool = False) -> list[VersionEntry]:
        """The versions of ``subject``, oldest first; soft-deleted ones only with ``deleted``."""
        with self.lock:
            versions = self._subjects.get(subject, {})
            return [versions[n] for n in sorted(versions) if deleted or not versions[n].deleted]

    def version(self, subject: str, version: int) -> VersionEntry | None:
        """One version, soft-deleted or not."""
        with self.lock:
            return self._subjects.get(subject, {}).get(version)

    def max_version(self, subject: str) -> int:
        """The highest version number of ``subject``, soft-deleted ones included (0: none)."""
        with self.lock:
            return max(self._subjects.get(subject, {0: None}))

    def all_versions(self) -> list[VersionEntry]:
        """Every version of every subject, by subject then version."""
        with self.lock:
            return [v for s in sorted(self._subjects)
                    for _, v in sorted(self._subjects[s].items())]

    # ------------------------------------------------------------------ schemas by id

    def schema(self, schema_id: int) -> SchemaEntry | None:
        with self.lock:
            return self._schemas.get(schema_id)

    def id_for_guid(self, guid: str) -> int | None:
        """The id of the stored schema with this guid (None if unknown)."""
        with self.lock:
            return self._ids_by_guid.get(guid)

    def users_of(self, schema_id: int) -> list[VersionEntry]:
        """The versions (soft-deleted included) that carry ``schema_id``, sorted."""
        with self.lock:
            return [self._subjects[s][v] for s, v in sorted(self._users.get(schema_id, ()))]

    def referencing(self, subject: str, version: int) -> list[VersionEntry]:
        """Versions (soft-deleted included) whose references name ``subject``/``version``."""
        with self.lock:
            return [entry for entry in self.all_versions()
                    if any(r.subject == subject and r.version == version
                           for r in entry.references)]

    # ------------------------------------------------------------------ parsing and identity

    def resolve(self, ref: Reference) -> tuple[str, str, tuple[Reference, ...]]:
        """``parse_schema``'s resolver over the replayed state (soft-deleted versions too)."""
        with self.lock:
            entry = self._subjects.get(ref.subject, {}).get(ref.version)
        if entry is None:
            raise UnresolvedReferenceError(
                f"Invalid schema reference {ref.name!r}: subject '{ref.subject}' has no "
                f"version {ref.version}")
        return entry.schema_type, entry.schema, entry.references

    def parsed(self, schema_id: int) -> ParsedSchema:
        """The parsed schema of ``schema_id`` (cached). Raises ``KeyError`` for an unknown id
        and ``SchemaError`` if the stored text does not parse."""
        with self.lock:
            cached = self._parsed.get(schema_id)
            if cached is not None:
                return cached
            entry = self._schemas[schema_id]
            parsed = parse_schema(entry.schema_type, entry.schema, entry.references,
                                  self.resolve)
            self._parsed[schema_id] = parsed
            return parsed

    def fingerprints_of(self, schema_id: int) -> frozenset[str]:
        """The exact-identity fingerprints of a stored schema (empty for an unknown id): the
        digest of its text as stored (what a request's ``fingerprint()`` equals when it was
        registered from the same text, normalized or not, as Confluent's MD5 lookup) and,
        if the text parses, the fingerprint of its re-parsed canonical form (which matches
        texts stored by other writers, e.g. Confluent's own ``_schemas`` topic); each
        combined with the schema's metadata and rule set (``contracts.contract_fingerprint``,
        which leaves a print as is when the schema has neither)."""
        with self.lock:
            self._index_pending()
            return self._fingerprints.get(schema_id, frozenset())

    def equivalence_of(self, schema_id: int) -> str | None:
        """``ParsedSchema.equivalence()`` of a stored schema; None if it does not parse."""
        try:
            return self.parsed(schema_id).equivalence()
        except (KeyError, SchemaError):
            return None

    def id_for_fingerprint(self, fingerprint: str) -> int | None:
        """The id of a stored schema with this fingerprint (the lowest such id)."""
        with self.lock:
            self._index_pending()
            return self._ids_by_fingerprint.get(fingerprint)

    def _index_pending(self) -> None:
        for schema_id in sorted(self._unindexed):
            entry = self._schemas[schema_id]
            prints = {identity_digest(entry.schema_type, entry.schema, entry.references)}
            try:
                prints.add(self.parsed(schema_id).fingerprint())
            except SchemaError as exc:
                # e.g. a schema type this registry cannot parse: it keeps its id and is
                # served, but only byte-identical text matches it.
                log.warning("stored schema %d does not parse (%s); it is matched by its "
                            "exact text only", schema_id, exc)
            # A schema's identity includes its contracts: the same text with another rule
            # set is another schema (contract_fingerprint leaves prints without any as is).
            prints = {contract_fingerprint(p, entry.metadata, entry.rule_set) for p in prints}
            self._fingerprints[schema_id] = frozenset(prints)
            for fingerprint in prints:
                current = self._ids_by_fingerprint.get(fingerprint)
                if current is None or schema_id < current:
                    self._ids_by_fingerprint[fingerprint] = schema_id
        self._unindexed.clear()

    # ------------------------------------------------------------------ config and mode

    def config(self, subject: str | None) -> dict[str, Any] | None:
        """The stored config of ``subject`` (None: global), or None if not set."""
        with self.lock:
            value = self._configs.get(subject)
            return None if value is None else dict(value)

    def mode(self, subject: str | None) -> str | None:
        """The stored mode of ``subject`` (None: global), or None if not set."""
        with self.lock:
            return self._modes.get(subject)

    def configured_subjects(self) -> Iterable[str]:
        with self.lock:
            return [s for s in self._configs if s is not None]

