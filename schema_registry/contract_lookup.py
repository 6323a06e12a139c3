"""``ContractLookup``: where data contracts meet the replayed registry state.

The queries Confluent's registry answers with a schema's metadata and rule set: finding a
version by schema (the same or an equivalent one) *and* contracts (or contracts that differ
only by ``confluent:version``), the newest version with given metadata properties, a schema
by guid, the versions of the same compatibility group, and the data-contract config in
scope. Reads only; the ``SchemaRegistry`` uses them for lookups and registrations.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from schema_registry import contracts
from schema_registry import errors as e
from schema_registry.schemas import ParsedSchema
from schema_registry.state import RegistryState, SchemaEntry, VersionEntry

__all__ = ["ContractLookup"]


class ContractLookup:
    """Contract-aware queries over ``state`` (each takes the state's lock as it reads)."""

    def __init__(self, state: RegistryState) -> None:
        self._state = state

    def fill_schema_from_latest(self, subject: str, body: Any) -> Any:
        """A registration without a schema (only new metadata or rules) takes the schema,
        type and references of the subject's latest live version, as Confluent's
        ``maybePopulateFromPrevious`` does; any other body is returned as is."""
        if not isinstance(body, dict):
            return body
        schema = body.get("schema")
        if isinstance(schema, str) and schema.strip():
            return body
        latest = self._state.versions(subject)[-1:]
        if not latest:
            return body
        return {**body, "schema": latest[0].schema, "schemaType": latest[0].schema_type,
                "references": [r.to_json() for r in latest[0].references]}

    def lookup(self, subject: str, parsed: ParsedSchema, metadata: dict[str, Any] | None,
               rule_set: dict[str, Any] | None, *, deleted: bool = False
               ) -> VersionEntry | None:
        """Confluent's ``lookUpSchemaUnderSubject``: the version holding the schema with
        these contracts; failing that, with the contracts a registration would have given
        it (the latest version's, merged with the config's defaults and overrides)."""
        with self._state.lock:
            found = self.find_under(subject, parsed, metadata, rule_set, deleted=deleted)
            latest = self._state.versions(subject)[-1:]
            if found is None and latest:
                merged = contracts.registration_contracts(
                    self.config(subject), metadata, rule_set,
                    (latest[0].metadata, latest[0].rule_set), None)
                if merged != (metadata, rule_set):
                    found = self.find_under(subject, parsed, *merged, deleted=deleted)
            return found

    def find_under(self, subject: str, parsed: ParsedSchema, metadata: dict[str, Any] | None,
                   rule_set: dict[str, Any] | None, *, deleted: bool = False
                   ) -> VersionEntry | None:
        """The newest version of ``subject`` holding ``parsed`` with these contracts, else
        one that differs only by ``confluent:version`` (see ``match``)."""
        return self.match(parsed, metadata, rule_set,
                          self._state.versions(subject, deleted=deleted), ignore_version=True)

    def match(self, parsed: ParsedSchema, metadata: dict[str, Any] | None,
              rule_set: dict[str, Any] | None, versions: list[VersionEntry], *,
              ignore_version: bool) -> VersionEntry | None:
        """The newest of ``versions`` stored from the same canonical text as ``parsed`` with
        the same contracts (Confluent's MD5 lookup); else the newest whose schema is the
        same or equivalent (JSON key order, normalization: ``ParsedSchema.equivalence``)
        and whose contracts are equal or, with ``ignore_version``, differ only by
        ``confluent:version`` (Confluent's ``canLookup``)."""
        if not versions:
            return None
        newest_first = list(reversed(versions))
        with self._state.lock:
            identity = contracts.contract_fingerprint(parsed.fingerprint(), metadata,
                                                      rule_set)
            for entry in newest_first:
                if identity in self._state.fingerprints_of(entry.id):
                    return entry
            for entry in newest_first:
                if ignore_version:
                    same = contracts.same_ignoring_version(metadata, rule_set, entry.metadata,
                                                           entry.rule_set, entry.version)
                else:
                    same = (metadata, rule_set) == (entry.metadata, entry.rule_set)
                if same and self._same_schema(parsed, entry):
                    return entry
        return None

    def _same_schema(self, parsed: ParsedSchema, entry: VersionEntry) -> bool:
        """True if ``entry``'s schema is ``parsed`` (its text, or re-parsed form, has the
        same fingerprint) or is equivalent to it, whatever the contracts."""
        own = contracts.contract_fingerprint(parsed.fingerprint(), entry.metadata,
                                             entry.rule_set)
        return own in self._state.fingerprints_of(entry.id) or \
            self._state.equivalence_of(entry.id) == parsed.equivalence()

    def latest_with_metadata(self, subject: str, wanted: Mapping[str, str], *,
                             deleted: bool = False) -> VersionEntry:
        """The newest version whose metadata properties include every ``wanted`` pair
        (``GET /subjects/{s}/metadata``): 40401 if the subject has no version, 40403 if
        none matches."""
        versions = self._state.versions(subject, deleted=deleted)
        for entry in reversed(versions):
            if contracts.properties_match(entry.metadata, wanted):
                return entry
        if not versions:
            raise e.SubjectNotFoundError(subject)
        raise e.SchemaNotFoundError()

    def schema_by_guid(self, guid: str) -> SchemaEntry:
        try:  # Confluent accepts a UUID in any case, or its 32 hex digits
            canonical = str(uuid.UUID(guid))
        except ValueError:
            raise e.SchemaNotFoundError(guid) from None  # type: ignore[arg-type]
        schema_id = self._state.id_for_guid(canonical)
        entry = None if schema_id is None else self._state.schema(schema_id)
        if entry is None:
            raise e.SchemaNotFoundError(guid)  # type: ignore[arg-type]
        return entry

    def same_group(self, subject: str, metadata: dict[str, Any] | None,
                    versions: list[VersionEntry]) -> list[VersionEntry]:
        """With a ``compatibilityGroup`` configured, only the versions whose metadata has
        the same value of that property as ``metadata`` (compatibility is checked within
        a group only); otherwise all of them."""
        group = self.config(subject).get("compatibilityGroup")
        if not group:
            return versions
        value = contracts.group_value(metadata, group)
        return [v for v in versions if contracts.group_value(v.metadata, group) == value]

    def config(self, subject: str | None) -> dict[str, Any]:
        """The data-contract config fields in scope for ``subject``: each from the
        subject's config if set there, else from the global one (Confluent's
        ``mergeConfigs``)."""
        merged: dict[str, Any] = {}
        for scope in ((None, subject) if subject is not None else (None,)):
            stored = self._state.config(scope) or {}
            merged.update({k: stored[k] for k in contracts.CONFIG_KEYS
                           if stored.get(k) is not None})
        return merged
