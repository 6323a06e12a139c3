"""``SchemaRegistry``: the registry's operations over the replayed state and the store.

Reads answer from the in-memory ``RegistryState``. Writes (register, deletes, config,
mode) compute the records to append from the state, then ``SchemaStore.write`` them and
return once they have been read back; they must run on the leader only, one at a time
(``WriteRouter`` in ``schema_registry.cluster`` guarantees both), because ids and version
numbers are derived from the state as it was before the write.

Semantics follow Confluent's ``KafkaSchemaRegistry``:

* registering a schema that is already live under the subject returns its id, no write;
* the same schema under another subject reuses that id with a new version here;
* otherwise the schema must pass the compatibility level (subject, else global, else
  ``schema.compatibility.level``) against the live versions, newest first;
* ids are ``max id ever seen + 1``; versions are ``max version (soft-deleted too) + 1``;
* a permanent delete requires a soft delete first (40405 / 40407);
* READONLY mode refuses registrations and deletes; IMPORT mode accepts the ``id`` and
  ``version`` given in the request and skips the compatibility check.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schema_registry import contracts
from schema_registry import errors as e
from schema_registry.config_update import LEVEL_KEYS, config_fields, known_config
from schema_registry.contract_lookup import ContractLookup
from schema_registry.records import (
    ConfigRecord,
    DeleteSubjectRecord,
    MaxIdRecord,
    ModeRecord,
    Record,
    SchemaRecord,
)
from schema_registry.schemas import (
    COMPATIBILITY_LEVELS,
    SCHEMA_TYPES,
    ParsedSchema,
    Reference,
    SchemaError,
    check_compatibility,
    parse_schema,
)
from schema_registry.state import RegistryState, SchemaEntry, VersionEntry
from schema_registry.store import SchemaStore

__all__ = ["LATEST", "MODES", "SchemaRegistry", "SchemaRequest", "parse_version"]

log = logging.getLogger(__name__)

#: Modes Confluent defines; FORWARD and READONLY_OVERRIDE are accepted for compatibility.
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT", "FORWARD")
READ_ONLY_MODES = ("READONLY", "READONLY_OVERRIDE")
ID_ACCEPTING_MODES = ("IMPORT", "FORWARD")
#: The version spec meaning "the latest version".
LATEST = -1
_MAX_VERSION = 2**31 - 1
_RESERVED_SUBJECTS = ("__GLOBAL", "__EMPTY")


def parse_version(text: str) -> int:
    """A path's version: ``latest`` (any case) or ``-1`` → ``LATEST``; 1..2^31-1 as is;
    anything else is ``InvalidVersionError`` (42202)."""
    if text.lower() == "latest":
        return LATEST
    try:
        number = int(text)
    except ValueError:
        raise e.InvalidVersionError(text) from None
    if number == LATEST or 1 <= number <= _MAX_VERSION:
        return number
    raise e.InvalidVersionError(text)


def check_subject(subject: str) -> str:
    """Confluent's ``isValidSubject``: no control characters, not a reserved name."""
    if subject in _RESERVED_SUBJECTS or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F
                                            for c in subject):
        raise e.InvalidSubjectError(subject)
    return subject


@dataclass(frozen=True, slots=True)
class SchemaRequest:
    """The body of a register, lookup or compatibility request. Unknown fields are
    ignored; ``metadata`` and ``ruleSet`` are kept in normal form (``contracts``)."""

    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()
    version: int = 0
    id: int = -1
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, body: Any) -> SchemaRequest:
        if not isinstance(body, dict):
            raise e.InvalidSchemaError("The request body must be a JSON object with a "
                                       "'schema' field")
        schema = body.get("schema")
        if not isinstance(schema, str) or not schema.strip():
            raise e.InvalidSchemaError("Empty schema")
        schema_type = body.get("schemaType") or "AVRO"
        if not isinstance(schema_type, str):
            raise e.InvalidSchemaError(f"Invalid schemaType {schema_type!r}")
        contracts.refuse_schema_tags(body)
        refs = body.get("references") or []
        if not isinstance(refs, list):
            raise e.InvalidSchemaError("'references' must be a list of "
                                       '{"name", "subject", "version"} objects')
        try:
            references = tuple(Reference.from_json(r) for r in refs)
        except SchemaError as exc:
            raise e.InvalidSchemaError(str(exc)) from None
        return cls(schema, schema_type.upper(), references, _int_field(body, "version", 0),
                   _int_field(body, "id", -1), contracts.parse_metadata(body.get("metadata")),
                   contracts.parse_rule_set(body.get("ruleSet")))


def _int_field(body: Mapping[str, Any], name: str, default: int) -> int:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise e.InvalidSchemaError(f"'{name}' must be an integer, got {value!r}")
    return value


class SchemaRegistry:
    """Reads and (leader-only) writes. See the module docstring."""

    def __init__(self, state: RegistryState, store: SchemaStore, *,
                 default_compatibility: str = "BACKWARD", mode_mutable: bool = True) -> None:
        level = default_compatibility.upper()
        if level not in COMPATIBILITY_LEVELS:
            raise e.RegistryConfigError(
                f"schema.compatibility.level={default_compatibility!r} is not one of "
                f"{', '.join(lvl.lower() for lvl in COMPATIBILITY_LEVELS)}")
        self.state = state
        self.store = store
        self._contracts = ContractLookup(state)
        self.default_compatibility = level
        self.mode_mutable = mode_mutable
        #: Incompatible schemas seen, for /metrics: refused registrations and checks that
        #: answered ``is_compatible: false`` (plain adds under the GIL).
        self.compatibility_failures = {"register": 0, "check": 0}

    # ================================================================== reads

    def subjects(self, *, prefix: str = "", deleted: bool = False,
                 deleted_only: bool = False) -> list[str]:
        """Subject names with a live version (or any version with ``deleted``; a
        soft-deleted one with ``deleted_only``), sorted."""
        result = []
        with self.state.lock:
            for subject in self.state.subject_names():
                if not subject.startswith(prefix):
                    continue
                versions = self.state.versions(subject, deleted=True)
                if deleted_only:
                    keep = any(v.deleted for v in versions)
                else:
                    keep = deleted or any(not v.deleted for v in versions)
                if keep:
                    result.append(subject)
        return result

    def version_numbers(self, subject: str, *, deleted: bool = False,
                        deleted_only: bool = False,
                        deleted_as_negative: bool = False) -> list[int]:
        versions = self.state.versions(subject, deleted=True)
        if deleted_only:
            chosen = [v for v in versions if v.deleted]
        else:
            chosen = [v for v in versions if deleted or deleted_as_negative or not v.deleted]
        if not chosen:
            raise e.SubjectNotFoundError(subject)
        return [-v.version if deleted_as_negative and v.deleted else v.version for v in chosen]

    def get_version(self, subject: str, version: int, *, deleted: bool = False
                    ) -> VersionEntry:
        """One version (``LATEST``: the newest live one, or newest of all with
        ``deleted``). 40401 if the subject has no visible version, 40402 if that one is
        missing."""
        with self.state.lock:
            visible = self.state.versions(subject, deleted=deleted)
            if version == LATEST:
                if not visible:
                    raise e.SubjectNotFoundError(subject)
                return visible[-1]
            entry = self.state.version(subject, version)
            if entry is None or (entry.deleted and not deleted):
                if not visible:
                    raise e.SubjectNotFoundError(subject)
                raise e.VersionNotFoundError(version)
            return entry

    def lookup(self, subject: str, body: Any, *, normalize: bool = False,
               deleted: bool = False) -> VersionEntry:
        """The version of ``subject`` holding the schema in ``body`` with its contracts
        (the newest match): first one stored from the same canonical text, else one that
        is equivalent (Confluent's ``lookUpSchemaUnderSubject``: MD5 lookup, then
        ``canLookup``), else one with the contracts a registration would have given it
        (``ContractLookup.lookup``)."""
        # As Confluent's SubjectsResource: the schema is parsed first (invalid is 42201
        # whether or not the subject exists); an empty one matches nothing.
        found = None
        if not (isinstance(body, dict) and isinstance(body.get("schema"), str)
                and not body["schema"].strip()):
            request = SchemaRequest.from_json(body)
            parsed = self._parse(request, self._normalizing(subject, normalize))
            found = self._contracts.lookup(subject, parsed, request.metadata,
                                           request.rule_set, deleted=deleted)
        if found is None:
            if not self.state.versions(subject, deleted=deleted):
                raise e.SubjectNotFoundError(subject)
            raise e.SchemaNotFoundError()
        return found

    def latest_with_metadata(self, subject: str, wanted: Mapping[str, str], *,
                             deleted: bool = False) -> VersionEntry:
        """``GET /subjects/{s}/metadata`` (see ``ContractLookup.latest_with_metadata``)."""
        return self._contracts.latest_with_metadata(subject, wanted, deleted=deleted)

    def schema_by_guid(self, guid: str) -> SchemaEntry:
        """``GET /schemas/guids/{guid}``; 40403 for an unknown guid."""
        return self._contracts.schema_by_guid(guid)

    def schema_by_id(self, schema_id: int) -> SchemaEntry:
        entry = self.state.schema(schema_id)
        if entry is None:
            raise e.SchemaNotFoundError(schema_id)
        return entry

    def versions_of_id(self, schema_id: int, *, deleted: bool = False,
                       subject: str | None = None) -> list[VersionEntry]:
        """The subject versions that carry ``schema_id`` (live ones unless ``deleted``)."""
        self.schema_by_id(schema_id)
        return [v for v in self.state.users_of(schema_id)
                if (deleted or not v.deleted) and (subject is None or v.subject == subject)]

    def schemas(self, *, prefix: str = "", deleted: bool = False,
                latest_only: bool = False) -> list[VersionEntry]:
        """Versions of every subject starting with ``prefix``, by subject and version."""
        result: list[VersionEntry] = []
        with self.state.lock:
            for subject in self.state.subject_names():
                if subject.startswith(prefix):
                    versions = self.state.versions(subject, deleted=deleted)
                    result.extend(versions[-1:] if latest_only else versions)
        return result

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas whose references name this subject version."""
        with self.state.lock:
            entry = self.get_version(subject, version, deleted=True)
            return sorted({v.id for v in self.state.referencing(subject, entry.version)
                           if not v.deleted})

    def test_compatibility(self, subject: str, version: int | None, body: Any, *,
                           normalize: bool = False, verbose: bool = False) -> dict[str, Any]:
        """``{"is_compatible": bool}`` (+ ``messages`` when ``verbose``) for the schema in
        ``body`` against one version (``LATEST`` or a number) or, with ``None``, against
        the live versions the subject's level selects."""
        # The version is resolved first: a version that does not exist is 40402 whatever
        # the body says, and whether or not the subject exists (CompatibilityResource).
        if version is not None and version != LATEST:
            entry = self.state.version(subject, version)
            if entry is None or entry.deleted:
                raise e.VersionNotFoundError(version)
        request = SchemaRequest.from_json(body)
        try:
            parsed = self._parse(request, self._normalizing(subject, normalize))
        except e.InvalidSchemaError as exc:
            if verbose:
                return {"is_compatible": False, "messages": [exc.message]}
            raise
        level = self.compatibility_level(subject)
        with self.state.lock:
            live = self.state.versions(subject)
            if version is None:
                previous, transitive_ok = live, True
            elif version == LATEST:
                previous, transitive_ok = live[-1:], False
            else:
                entry = self.state.version(subject, version)
                if entry is None or entry.deleted:
                    raise e.VersionNotFoundError(version)
                previous, transitive_ok = [entry], False
            previous = self._contracts.same_group(subject, request.metadata, previous)
            messages = self._incompatibilities(level, parsed, previous,
                                               transitive=transitive_ok)
        if messages:
            self.compatibility_failures["check"] += 1
        result: dict[str, Any] = {"is_compatible": not messages}
        if verbose:
            result["messages"] = messages
        return result

    def compatibility_level(self, subject: str | None) -> str:
        """The effective level: the subject's, else the global one, else the default."""
        for scope in ((subject, None) if subject is not None else (None,)):
            config = self.state.config(scope)
            level = None if config is None else config.get("compatibilityLevel")
            if isinstance(level, str) and level.upper() in COMPATIBILITY_LEVELS:
                return level.upper()
        return self.default_compatibility

    def get_config(self, subject: str | None, *, default_to_global: bool = False
                   ) -> dict[str, Any]:
        """``{"compatibilityLevel": ...}`` (plus any other stored config fields)."""
        if subject is not None:
            stored = self.state.config(subject)
            if stored is not None:
                return _config_view(stored, self.compatibility_level(subject))
            if not default_to_global:
                raise e.SubjectConfigNotFoundError(subject)
        stored = self.state.config(None) or {}
        return _config_view(stored, self.compatibility_level(None))

    def mode(self, subject: str | None) -> str:
        """The effective mode: the subject's, else the global one, else READWRITE."""
        if subject is not None:
            mode = self.state.mode(subject)
            if mode is not None:
                return mode
        return self.state.mode(None) or "READWRITE"

    def get_mode(self, subject: str | None, *, default_to_global: bool = False
                 ) -> dict[str, str]:
        if subject is not None and not default_to_global and self.state.mode(subject) is None:
            raise e.SubjectModeNotFoundError(subject)
        return {"mode": self.mode(subject)}

    # ================================================================== writes (leader)

    def register(self, subject: str, body: Any, *, normalize: bool = False) -> VersionEntry:
        """Register the schema in ``body`` under ``subject``; the version holding it."""
        check_subject(subject)
        if self.mode(subject) not in ID_ACCEPTING_MODES:
            body = self._contracts.fill_schema_from_latest(subject, body)
        request = SchemaRequest.from_json(body)
        mode = self.mode(subject)
        if mode in READ_ONLY_MODES:
            raise e.OperationNotPermittedError(f"Subject {subject} is in read-only mode")
        importing = mode in ID_ACCEPTING_MODES
        if request.id >= 0 and not importing:
            raise e.OperationNotPermittedError(f"Subject {subject} is not in import mode")
        if importing and request.id < 0:
            raise e.OperationNotPermittedError(f"Subject {subject} is not in read-write mode")
        parsed = self._parse(request, self._normalizing(subject, normalize))
        with self.state.lock:
            live = self.state.versions(subject)
            next_version = self.state.max_version(subject) + 1
            config = self._contracts.config(subject)
            metadata, rule_set = request.metadata, request.rule_set
            if request.version == 0 and not contracts.has_defaults_or_overrides(config):
                # Confluent first looks the request up as sent: a schema sent without the
                # confluent:version its registered version has is that version.
                found = self._contracts.find_under(subject, parsed, metadata, rule_set)
                if found is not None and request.id in (-1, found.id):
                    return found
            if not importing:
                metadata, rule_set = contracts.registration_contracts(
                    config, metadata, rule_set,
                    (live[-1].metadata, live[-1].rule_set) if live else None,
                    next_version, request.version)
            fingerprint = contracts.contract_fingerprint(parsed.fingerprint(), metadata,
                                                         rule_set)
            entry = self._contracts.match(parsed, metadata, rule_set, live,
                                          ignore_version=False)
            exact = entry is not None and fingerprint in self.state.fingerprints_of(entry.id)
            if entry is not None and importing and request.id != entry.id and not exact:
                entry = None  # an equivalent text may be imported under its own id
            if entry is not None:
                if importing and request.id != entry.id:
                    raise e.IdDoesNotMatchError(
                        f"Schema already registered with id {entry.id} instead of input "
                        f"id {request.id}")
                return entry
            if request.version == 0 and not importing:
                found = self._contracts.find_under(subject, parsed, metadata, rule_set)
                if found is not None:
                    return found
            if importing:
                schema_id = request.id
                if self.state.schema(schema_id) is not None and \
                        fingerprint not in self.state.fingerprints_of(schema_id):
                    raise e.IdDoesNotMatchError(
                        f"Overwrite new schema with id {schema_id} is not permitted: the id "
                        "is used by a different schema")
            else:
                level = self.compatibility_level(subject)
                live = self._contracts.same_group(subject, metadata, live)
                messages = self._incompatibilities(level, parsed, live, transitive=True)
                if messages:
                    self.compatibility_failures["register"] += 1
                    raise e.IncompatibleSchemaError(subject, messages)
                existing = self.state.id_for_fingerprint(fingerprint)
                schema_id = existing if existing is not None else self.state.max_id + 1
            if importing and request.version > 0:
                version = request.version
                taken = self.state.version(subject, version)
                if taken is not None and taken.id != schema_id:
                    raise e.OperationNotPermittedError(
                        f"Overwrite new schema with version {version} of subject {subject} "
                        f"is not permitted: it holds schema id {taken.id}")
            elif request.version > 0 and request.version != next_version:
                raise e.InvalidSchemaError(
                    f"Version is not one more than previous version: version "
                    f"{request.version} given, subject {subject} is at {next_version - 1}")
            else:
                version = next_version
            # An id already in use keeps its text: the request may have matched it through
            # the re-parsed form of a text written otherwise (normalized, or by another
            # registry), and one id must never carry two texts. (Its contracts equal the
            # request's: they are part of the identity the id was found by.)
            reused = self.state.schema(schema_id)
        if reused is not None:
            record = SchemaRecord(subject, version, schema_id, reused.schema_type,
                                  reused.schema, reused.references, False, reused.metadata,
                                  reused.rule_set)
        else:
            record = SchemaRecord(subject, version, schema_id, parsed.schema_type,
                                  parsed.canonical(), parsed.references, False, metadata,
                                  rule_set)
        self.store.write([record])
        stored = self.state.version(subject, version)
        if stored is None or stored.id != schema_id:
            raise e.StoreError(f"A concurrent write changed subject {subject} version "
                               f"{version}; retry the request")
        log.info("registered schema id %d as %s version %d", schema_id, subject, version)
        return stored

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        """Soft-delete the live versions, or (``permanent``) remove every soft-deleted
        version together with the subject's config and mode. Returns the versions."""
        self._check_writable(subject)
        with self.state.lock:
            versions = self.state.versions(subject, deleted=True)
            if not versions:
                raise e.SubjectNotFoundError(subject)
            live = [v for v in versions if not v.deleted]
            records: list[Record]
            if permanent:
                if live:
                    raise e.SubjectNotSoftDeletedError(subject)
                self._check_unreferenced(versions)
                records = [MaxIdRecord(self.state.max_id)]
                records += [SchemaRecord(subject, v.version) for v in versions]
                if self.state.config(subject) is not None:
                    records.append(ConfigRecord(subject, None))
                if self.state.mode(subject) is not None:
                    records.append(ModeRecord(subject, None))
                deleted = [v.version for v in versions]
            else:
                if not live:
                    raise e.SubjectSoftDeletedError(subject)
                self._check_unreferenced(live)
                records = [DeleteSubjectRecord(subject, versions[-1].version)]
                deleted = [v.version for v in live]
        self.store.write(records)
        log.info("%s deleted subject %s versions %s", "permanently" if permanent else "soft",
                 subject, deleted)
        return deleted

    def delete_version(self, subject: str, version: int, *, permanent: bool = False) -> int:
        """Soft-delete one version, or remove a soft-deleted one for good."""
        self._check_writable(subject)
        with self.state.lock:
            versions = self.state.versions(subject, deleted=True)
            if not versions:
                raise e.SubjectNotFoundError(subject)
            if version == LATEST:
                live = [v for v in versions if not v.deleted]
                entry = versions[-1] if permanent or not live else live[-1]
            else:
                found = self.state.version(subject, version)
                if found is None:
                    raise e.VersionNotFoundError(version)
                entry = found
            if permanent:
                if not entry.deleted:
                    raise e.VersionNotSoftDeletedError(subject, entry.version)
                self._check_unreferenced([entry])
                records = [MaxIdRecord(self.state.max_id), SchemaRecord(subject, entry.version)]
            else:
                if entry.deleted:
                    raise e.VersionSoftDeletedError(subject, entry.version)
                self._check_unreferenced([entry])
                records = [SchemaRecord(subject, entry.version, entry.id, entry.schema_type,
                                        entry.schema, entry.references, True, entry.metadata,
                                        entry.rule_set)]
        self.store.write(records)
        log.info("%s deleted subject %s version %d", "permanently" if permanent else "soft",
                 subject, entry.version)
        return entry.version

    def set_config(self, subject: str | None, body: Any) -> dict[str, Any]:
        """PUT /config[/subject]: ``{"compatibility": LEVEL}`` → echoes the update."""
        if subject is not None:
            check_subject(subject)
        if not isinstance(body, dict):
            raise e.InvalidCompatibilityLevelError()
        raw = next((body[k] for k in LEVEL_KEYS if body.get(k) is not None), None)
        others = config_fields(body)  # known fields only, type-checked
        # data-contract fields in normal form; a null among them clears the field
        others.update(contracts.normalize_config_fields(body))
        before = self.state.config(subject) or {}
        stored = known_config(before)
        if isinstance(before.get("compatibilityLevel"), str):
            stored["compatibilityLevel"] = before["compatibilityLevel"]
        if raw is not None:
            if not isinstance(raw, str) or raw.upper() not in COMPATIBILITY_LEVELS:
                raise e.InvalidCompatibilityLevelError()
            stored["compatibilityLevel"] = raw.upper()
        elif not others:
            raise e.InvalidCompatibilityLevelError()
        stored.update(others)
        for key in contracts.CONFIG_KEYS:
            if stored.get(key, 0) is None:
                del stored[key]
        self.store.write([ConfigRecord(subject, stored)])
        response: dict[str, Any] = {}
        if raw is not None:
            response["compatibility"] = raw.upper()
        response.update(others)
        return response

    def delete_config(self, subject: str | None) -> dict[str, Any]:
        """DELETE /config[/subject]: remove the setting; returns the old config."""
        if subject is None:
            old = self.get_config(None)
            if self.state.config(None) is not None:
                self.store.write([ConfigRecord(None, None)])
            return old
        stored = self.state.config(subject)
        if stored is None:
            raise e.SubjectNotFoundError(subject)
        old = _config_view(stored, self.compatibility_level(subject))
        self.store.write([ConfigRecord(subject, None)])
        return old

    def set_mode(self, subject: str | None, body: Any, *, force: bool = False
                 ) -> dict[str, str]:
        """PUT /mode[/subject]: ``{"mode": MODE}``. Entering IMPORT needs no live subject
        (in that scope) unless ``force``."""
        if subject is not None:
            check_subject(subject)
        raw = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(raw, str) or raw.upper() not in MODES:
            raise e.InvalidModeError()
        mode = raw.upper()
        if not self.mode_mutable:
            raise e.OperationNotPermittedError("Mode changes are not allowed "
                                               "(mode.mutability=false)")
        if mode == "IMPORT" and not force:
            scope = [subject] if subject is not None else self.state.subject_names()
            if any(self.state.versions(s) for s in scope):
                raise e.OperationNotPermittedError(
                    "Cannot import since found existing subjects")
        self.store.write([ModeRecord(subject, mode)])
        return {"mode": mode}

    def delete_mode(self, subject: str | None) -> dict[str, str]:
        """DELETE /mode[/subject]: remove the setting; returns the old mode."""
        if not self.mode_mutable:
            raise e.OperationNotPermittedError("Mode changes are not allowed "
                                               "(mode.mutability=false)")
        stored = self.state.mode(subject)
        if subject is not None and stored is None:
            raise e.SubjectModeNotFoundError(subject)
        if stored is not None:
            self.store.write([ModeRecord(subject, None)])
        return {"mode": stored or "READWRITE"}

    # ================================================================== helpers

    def _parse(self, request: SchemaRequest, normalize: bool) -> ParsedSchema:
        # Confluent's wording (AbstractSchemaRegistry.loadSchema), details our own.
        if request.schema_type not in SCHEMA_TYPES:
            raise e.InvalidSchemaError(f"Invalid schema type {request.schema_type} (this "
                                       f"registry serves {', '.join(SCHEMA_TYPES)})")
        try:
            return parse_schema(request.schema_type, request.schema, request.references,
                                self.state.resolve, normalize=normalize)
        except SchemaError as exc:
            raise e.InvalidSchemaError(f"Invalid schema of type {request.schema_type}, "
                                       f"details: {exc}") from None
        except RecursionError:
            # load_json bounds each document's nesting; references can still chain deep.
            raise e.InvalidSchemaError(
                f"Invalid schema of type {request.schema_type}, details: it nests too "
                "deeply (through its references) to be processed") from None

    def _normalizing(self, subject: str | None, requested: bool) -> bool:
        """``normalize`` as asked, else as the subject's (or global) config says, as in
        Confluent's resources (``normalize || config.isNormalize()``)."""
        if requested:
            return True
        for scope in ((subject, None) if subject is not None else (None,)):
            config = self.state.config(scope)
            if config is not None and isinstance(config.get("normalize"), bool):
                return config["normalize"]
        return False

    def _incompatibilities(self, level: str, new: ParsedSchema,
                           previous: list[VersionEntry], *, transitive: bool) -> list[str]:
        """The incompatibilities of ``new`` under ``level`` with the newest version of
        ``previous`` (oldest first) or, for a transitive level, with the first one that
        fails, newest first (Confluent's ``validateAll``); empty if compatible."""
        if level == "NONE" or not previous:
            return []
        base = level.removesuffix("_TRANSITIVE")
        to_check = previous if transitive and level.endswith("_TRANSITIVE") else previous[-1:]
        for entry in reversed(to_check):
            try:
                old = self.state.parsed(entry.id)
            except SchemaError as exc:
                raise e.InvalidSchemaError(
                    f"Cannot check compatibility with version {entry.version} of subject "
                    f"{entry.subject}: its stored schema does not parse: {exc}") from None
            problems = check_compatibility(base, new, [old])
            if problems:
                at = len(problems) - 1 if problems[-1].startswith("{oldSchema:") else \
                    len(problems)
                problems.insert(at, f"{{oldSchemaVersion: {entry.version}}}")
                problems.append(f"{{validateFields: 'false', compatibility: '{level}'}}")
                return problems
        return []

    def _check_writable(self, subject: str) -> None:
        if self.mode(subject) in READ_ONLY_MODES:
            raise e.OperationNotPermittedError(f"Subject {subject} is in read-only mode")

    def _check_unreferenced(self, versions: list[VersionEntry]) -> None:
        for entry in versions:
            users = [v for v in self.state.referencing(entry.subject, entry.version)
                     if not v.deleted]
            if users:
                raise e.ReferenceExistsError(
                    f"{{subject={entry.subject},version={entry.version}}} (referenced by "
                    f"{', '.join(f'{u.subject} version {u.version}' for u in users)})")


def _config_view(stored: Mapping[str, Any], level: str) -> dict[str, Any]:
    stored_level = stored.get("compatibilityLevel")
    if not (isinstance(stored_level, str) and stored_level.upper() in COMPATIBILITY_LEVELS):
        stored_level = level
    return {"compatibilityLevel": stored_level, **known_config(stored)}
