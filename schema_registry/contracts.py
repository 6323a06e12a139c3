"""Data contracts: a schema version's ``metadata`` and ``ruleSet``, as Confluent models them.

Clients attach them to a registration (``{"schema": ..., "metadata": {...}, "ruleSet":
{...}}``); the registry stores them with the version, returns them wherever it returns the
version, and makes them part of the schema's identity: the same schema text with another
rule set is another schema with its own id and guid. Configs may carry
``defaultMetadata``/``overrideMetadata``/``defaultRuleSet``/``overrideRuleSet`` (merged
into every registration) and ``compatibilityGroup`` (a metadata property whose value splits
a subject's versions into groups checked for compatibility separately).

Values here are plain JSON dicts in Confluent's normal form, so they can be stored and
served as is: tags, properties, params and sensitive names sorted, rule defaults filled in
(``kind`` TRANSFORM, ``mode`` WRITEREAD, ``disabled`` false), empty fields dropped, and
fields in the order Confluent's Jackson entities write them. The guid follows Confluent's
``Schema.updateHash``: an MD5 over the schema text, references, metadata and rule set,
written as a UUID.
"""

from __future__ import annotations

import hashlib
import json
import struct
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from schema_registry import errors as e
from schema_registry.schemas import Reference

__all__ = [
    "CONFIG_KEYS",
    "CONFLUENT_VERSION",
    "confluent_version",
    "contract_fingerprint",
    "group_value",
    "has_confluent_version",
    "has_defaults_or_overrides",
    "merge_metadata",
    "merge_rule_sets",
    "normalize_config_fields",
    "parse_metadata",
    "parse_rule_set",
    "properties_match",
    "refuse_schema_tags",
    "registration_contracts",
    "same_ignoring_version",
    "schema_guid",
    "with_confluent_version",
    "without_confluent_version",
]

#: The metadata property in which Confluent records the version a schema was registered as.
CONFLUENT_VERSION = "confluent:version"
#: Config fields about data contracts (besides ``compatibilityLevel`` and the others).
CONFIG_KEYS = ("compatibilityGroup", "defaultMetadata", "overrideMetadata",
               "defaultRuleSet", "overrideRuleSet")

_KINDS = ("CONDITION", "TRANSFORM")
_MIGRATION_MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN")
_DOMAIN_MODES = ("WRITE", "READ", "WRITEREAD")
_MULTI_ACTION_MODES = ("WRITEREAD", "UPDOWN")
_ENABLE_AT = ("ALL", "CLIENT", "GATEWAY", "SERVER", "NONE")
_RULE_LISTS = (("migrationRules", _MIGRATION_MODES, "Migration rules can only be UPGRADE, "
                "DOWNGRADE, UPDOWN"),
               ("domainRules", _DOMAIN_MODES, "Domain rules can only be WRITE, READ, WRITEREAD"),
               ("encodingRules", _DOMAIN_MODES, "Encoding rules can only be WRITE, READ, "
                "WRITEREAD"))
_NAME_MAX_LENGTH = 256

Metadata = dict[str, Any]
RuleSet = dict[str, Any]


# ---------------------------------------------------------------------------------- parsing


def parse_metadata(raw: Any, what: str = "metadata") -> Metadata | None:
    """``raw`` (a request's ``metadata``) in normal form; None stays None. Unknown fields
    are ignored as Confluent ignores them; wrongly typed ones are ``InvalidSchemaError``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise e.InvalidSchemaError(f"Invalid {what}: expected an object, got {_kind(raw)}")
    tags = _object(raw.get("tags"), f"{what}.tags")
    properties = _object(raw.get("properties"), f"{what}.properties")
    out: Metadata = {}
    if tags:
        out["tags"] = {k: sorted(set(_strings(v, f"{what}.tags.{k}"))) for k, v in
                       sorted(tags.items())}
    if properties:
        for key, value in properties.items():
            if not isinstance(value, str):
                raise e.InvalidSchemaError(f"Invalid {what}.properties.{key}: expected a "
                                           f"string, got {_kind(value)}")
        out["properties"] = dict(sorted(properties.items()))
    sensitive = sorted(set(_strings(raw.get("sensitive"), f"{what}.sensitive")))
    if sensitive:
        out["sensitive"] = sensitive
    return out


def parse_rule_set(raw: Any, what: str = "ruleSet") -> RuleSet | None:
    """``raw`` (a request's ``ruleSet``) in normal form and validated as Confluent's
    ``RuleSet.validate`` does; None stays None. Problems are ``InvalidRuleSetError``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise e.InvalidRuleSetError(f"Invalid {what}: expected an object, got {_kind(raw)}")
    out: RuleSet = {}
    names: set[str] = set()
    for field, modes, wrong_mode in _RULE_LISTS:
        rules = raw.get(field)
        if rules is None:
            continue
        if not isinstance(rules, list):
            raise e.InvalidRuleSetError(f"Invalid {what}.{field}: expected a list of rules")
        parsed = []
        for rule in rules:
            normal = _parse_rule(rule, f"{what}.{field}")
            if normal["name"] in names:
                raise e.InvalidRuleSetError(
                    f"Found rule with duplicate name '{normal['name']}'")
            names.add(normal["name"])
            if normal["mode"] not in modes:
                raise e.InvalidRuleSetError(wrong_mode)
            parsed.append(normal)
        if parsed:
            out[field] = parsed
    enable_at = raw.get("enableAt")
    if enable_at is not None:
        if enable_at not in _ENABLE_AT:
            raise e.InvalidRuleSetError(f"Invalid {what}.enableAt {enable_at!r}: expected one "
                                        f"of {', '.join(_ENABLE_AT)}")
        out["enableAt"] = enable_at
    return out


def _parse_rule(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise e.InvalidRuleSetError(f"Invalid rule in {where}: expected an object")
    name = raw.get("name")
    if not isinstance(name, str):
        raise e.InvalidRuleSetError("Missing rule name")
    _check_rule_name(name)
    kind = raw.get("kind") or "TRANSFORM"
    mode = raw.get("mode") or "WRITEREAD"
    if kind not in _KINDS:
        raise e.InvalidRuleSetError(f"Invalid kind {kind!r} of rule '{name}': expected "
                                    "CONDITION or TRANSFORM")
    if mode not in _MIGRATION_MODES + _DOMAIN_MODES:
        raise e.InvalidRuleSetError(f"Invalid mode {mode!r} of rule '{name}'")
    rule_type = raw.get("type")
    if not isinstance(rule_type, str):
        raise e.InvalidRuleSetError("Missing rule type")
    rule: dict[str, Any] = {"name": name}
    _optional_string(raw, "doc", rule, name)
    rule["kind"], rule["mode"], rule["type"] = kind, mode, rule_type
    tags = sorted(set(_strings(raw.get("tags"), f"rule '{name}' tags", e.InvalidRuleSetError)))
    if tags:
        rule["tags"] = tags
    params = raw.get("params") or {}
    if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
        raise e.InvalidRuleSetError(f"Invalid params of rule '{name}': expected an object of "
                                    "strings")
    if params:
        rule["params"] = dict(sorted(params.items()))
    for field in ("expr", "onSuccess", "onFailure"):
        _optional_string(raw, field, rule, name)
    for action in (rule.get("onSuccess"), rule.get("onFailure")):
        if action is not None and "," in action and mode not in _MULTI_ACTION_MODES:
            raise e.InvalidRuleSetError("Multiple actions only valid with WRITEREAD and UPDOWN")
    disabled = raw.get("disabled", False)
    if not isinstance(disabled, bool):
        raise e.InvalidRuleSetError(f"Invalid disabled of rule '{name}': expected a boolean")
    rule["disabled"] = disabled
    return rule


def _check_rule_name(name: str) -> None:
    if not name:
        raise e.InvalidRuleSetError("Empty rule name")
    if len(name) > _NAME_MAX_LENGTH:
        raise e.InvalidRuleSetError("Rule name too long")
    if not (name[0].isalpha() or name[0] == "_"):
        raise e.InvalidRuleSetError(f"Illegal initial character in rule name: {name}")
    if not all(c.isalnum() or c in "_-" for c in name[1:]):
        raise e.InvalidRuleSetError(f"Illegal character in rule name: {name}")


def _optional_string(raw: Mapping[str, Any], field: str, out: dict[str, Any],
                     name: str) -> None:
    value = raw.get(field)
    if value is None or value == "":
        return
    if not isinstance(value, str):
        raise e.InvalidRuleSetError(f"Invalid {field} of rule '{name}': expected a string")
    out[field] = value


def refuse_schema_tags(body: Mapping[str, Any]) -> None:
    """Confluent's schema tags (``schemaTagsToAdd``/``schemaTagsToRemove``,
    ``propagateSchemaTags``) rewrite the schema text; this registry does not, so a request
    asking for them is refused rather than registered without them."""
    asked = [k for k in ("schemaTagsToAdd", "schemaTagsToRemove") if body.get(k)]
    if body.get("propagateSchemaTags") is True:
        asked.append("propagateSchemaTags")
    if asked:
        raise e.InvalidSchemaError(f"{', '.join(asked)}: schema tags are not supported by "
                                   "this registry; tag fields in the schema text (e.g. Avro's "
                                   "\"confluent:tags\") or in metadata.tags instead")


def has_defaults_or_overrides(config: Mapping[str, Any]) -> bool:
    """True if a config in scope sets default or override metadata or rules."""
    return any(config.get(k) is not None for k in CONFIG_KEYS if k != "compatibilityGroup")


def normalize_config_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """The data-contract fields of a ``PUT /config`` body, validated and in normal form
    (only those present; a null value clears the field)."""
    out: dict[str, Any] = {}
    for key in CONFIG_KEYS:
        if key not in body:
            continue
        value = body[key]
        if key == "compatibilityGroup":
            if value is not None and not isinstance(value, str):
                raise e.InvalidSchemaError(f"Invalid compatibilityGroup {value!r}: expected "
                                           "the name of a metadata property")
            out[key] = value
        elif key.endswith("Metadata"):
            out[key] = parse_metadata(value, key)
        else:
            out[key] = parse_rule_set(value, key)
    return out


# ---------------------------------------------------------------------------------- merging


def merge_metadata(old: Metadata | None, new: Metadata | None) -> Metadata | None:
    """Confluent's ``Metadata.mergeMetadata``: ``new`` over ``old``, field by field (tags
    and properties by key, sensitive names as a union)."""
    if old is None:
        return new
    if new is None:
        return old
    tags = {**old.get("tags", {}), **new.get("tags", {})}  # a key's tags are replaced
    props = {**old.get("properties", {}), **new.get("properties", {})}
    sensitive = set(old.get("sensitive", ())) | set(new.get("sensitive", ()))
    return parse_metadata({"tags": tags, "properties": props, "sensitive": sorted(sensitive)})


def merge_rule_sets(old: RuleSet | None, new: RuleSet | None) -> RuleSet | None:
    """Confluent's ``RuleSet.mergeRuleSets``: per list, the old rules not renamed by a new
    rule of the same name, then the new rules; ``enableAt`` from ``new`` if set."""
    if old is None:
        return new
    if new is None:
        return old
    out: RuleSet = {}
    for field, _, _ in _RULE_LISTS:
        old_rules, new_rules = old.get(field) or [], new.get(field) or []
        if old_rules and new_rules:
            renamed = {r["name"] for r in new_rules}
            merged = [r for r in old_rules if r["name"] not in renamed] + new_rules
        else:
            merged = new_rules or old_rules
        if merged:
            out[field] = merged
    enable_at = new.get("enableAt") or old.get("enableAt")
    if enable_at:
        out["enableAt"] = enable_at
    return out


def confluent_version(metadata: Metadata | None) -> int | None:
    """The ``confluent:version`` property as a number (None if absent or not a number)."""
    value = (metadata or {}).get("properties", {}).get(CONFLUENT_VERSION)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def has_confluent_version(metadata: Metadata | None) -> bool:
    return CONFLUENT_VERSION in (metadata or {}).get("properties", {})


def with_confluent_version(metadata: Metadata | None, version: int) -> Metadata:
    props = dict((metadata or {}).get("properties", {}))
    props[CONFLUENT_VERSION] = str(version)
    return parse_metadata({**(metadata or {}), "properties": props}) or {}


def without_confluent_version(metadata: Metadata | None) -> Metadata | None:
    if metadata is None or CONFLUENT_VERSION not in metadata.get("properties", {}):
        return metadata
    props = {k: v for k, v in metadata["properties"].items() if k != CONFLUENT_VERSION}
    return parse_metadata({**metadata, "properties": props})


def group_value(metadata: Metadata | None, group: str) -> str | None:
    """The value of the compatibility group property ``group`` (None if unset)."""
    return (metadata or {}).get("properties", {}).get(group)


def properties_match(metadata: Metadata | None, wanted: Mapping[str, str]) -> bool:
    """True if every ``wanted`` key/value is among the metadata's properties (Confluent's
    ``getLatestWithMetadata``); a version without metadata never matches."""
    if metadata is None:
        return False
    props = metadata.get("properties", {})
    return all(props.get(k) == v for k, v in wanted.items())


# ---------------------------------------------------------------------------------- identity


def contract_fingerprint(schema_fingerprint: str, metadata: Metadata | None,
                         rule_set: RuleSet | None) -> str:
    """The identity of a schema together with its contracts. Without any, it is the parsed
    schema's own fingerprint (so identities computed before contracts existed still hold);
    with them, a digest of both, as Confluent's MD5 covers metadata and rule set."""
    if metadata is None and rule_set is None:
        return schema_fingerprint
    payload = json.dumps([schema_fingerprint, metadata, rule_set], sort_keys=True,
                         separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def schema_guid(schema: str, references: Sequence[Reference], metadata: Metadata | None,
                rule_set: RuleSet | None) -> str:
    """Confluent's guid of a stored schema: the MD5 of its text, references (name, subject,
    4-byte version), metadata and rule set (each preceded by a 1 byte when present), in the
    order and encoding of ``Schema.updateHash``, formatted as a UUID."""
    md = hashlib.md5(usedforsecurity=False)
    md.update(schema.encode("utf-8"))
    for ref in references:
        md.update(ref.name.encode("utf-8"))
        md.update(ref.subject.encode("utf-8"))
        md.update(struct.pack(">i", ref.version))
    if metadata is not None:
        md.update(b"\x01")
        for key, values in sorted(metadata.get("tags", {}).items()):
            md.update(key.encode("utf-8"))
            for value in sorted(values):
                md.update(value.encode("utf-8"))
        for key, value in sorted(metadata.get("properties", {}).items()):
            md.update(key.encode("utf-8"))
            md.update(value.encode("utf-8"))
        for name in sorted(metadata.get("sensitive", ())):
            md.update(name.encode("utf-8"))
    if rule_set is not None:
        md.update(b"\x01")
        for field, _, _ in _RULE_LISTS:
            for rule in rule_set.get(field, ()):
                _hash_rule(md, rule)
        if rule_set.get("enableAt"):
            md.update(rule_set["enableAt"].encode("utf-8"))
    return str(uuid.UUID(bytes=md.digest()))


def _hash_rule(md: Any, rule: Mapping[str, Any]) -> None:
    for field in ("name", "doc", "kind", "mode", "type"):
        if rule.get(field) is not None:
            md.update(rule[field].encode("utf-8"))
    for tag in rule.get("tags", ()):
        md.update(tag.encode("utf-8"))
    for key, value in rule.get("params", {}).items():
        md.update(key.encode("utf-8"))
        md.update(value.encode("utf-8"))
    for field in ("expr", "onSuccess", "onFailure"):
        if rule.get(field) is not None:
            md.update(rule[field].encode("utf-8"))
    if rule.get("disabled"):
        md.update(b"\x01")


# ---------------------------------------------------------------------------------- helpers


def _object(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise e.InvalidSchemaError(f"Invalid {where}: expected an object, got {_kind(raw)}")
    return raw


def _strings(raw: Any, where: str, error: type[e.RegistryError] = e.InvalidSchemaError
             ) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise error(f"Invalid {where}: expected a list of strings")
    return raw


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# ---------------------------------------------------------------------------------- registration


def registration_contracts(config: Mapping[str, Any], metadata: Metadata | None,
                           rule_set: RuleSet | None,
                           previous: tuple[Metadata | None, RuleSet | None] | None,
                           new_version: int | None, requested_version: int = 0
                           ) -> tuple[Metadata | None, RuleSet | None]:
    """The metadata and rule set a registration stores (Confluent's
    ``maybeSetMetadataRuleSet``): the request's own, else the previous version's; then the
    config's defaults under them and its overrides over them. ``confluent:version`` is set
    to ``new_version`` when the request names a version or the result already carries one
    (``new_version=None``, as for a lookup, leaves it alone)."""
    prev_md, prev_rs = previous if previous is not None else (None, None)
    specific_md = metadata if metadata is not None else prev_md
    specific_rs = rule_set if rule_set is not None else prev_rs
    merged_md = merge_metadata(merge_metadata(parse_metadata(config.get("defaultMetadata")),
                                              specific_md),
                               parse_metadata(config.get("overrideMetadata")))
    merged_rs = merge_rule_sets(merge_rule_sets(parse_rule_set(config.get("defaultRuleSet")),
                                                specific_rs),
                                parse_rule_set(config.get("overrideRuleSet")))
    if new_version is not None and (requested_version != 0 or
                                    has_confluent_version(merged_md)):
        merged_md = with_confluent_version(merged_md, new_version)
    return merged_md, merged_rs


def same_ignoring_version(metadata: Metadata | None, rule_set: RuleSet | None,
                          old_metadata: Metadata | None, old_rule_set: RuleSet | None,
                          old_version: int) -> bool:
    """Confluent's ``canLookupIgnoringVersion`` for the contracts of two schemas that are
    otherwise the same: one side may lack the ``confluent:version`` the other has (and a
    version the request names must be the old one's)."""
    if rule_set != old_rule_set:
        return False
    new_has, old_has = has_confluent_version(metadata), has_confluent_version(old_metadata)
    if old_has and not new_has:
        return (metadata or {}) == (without_confluent_version(old_metadata) or {})
    if new_has and not old_has:
        if confluent_version(metadata) != old_version:
            return False
        return (without_confluent_version(metadata) or {}) == (old_metadata or {})
    return metadata == old_metadata
