"""JSON Schema compatibility: the differences between an original and an updated schema.

Our implementation of the rules of Confluent's JSON Schema checker (``json/diff/SchemaDiff``
in its default STRICT policy), over the typed view of ``json_model``. ``diff(original,
update)`` lists every difference with Confluent's type name and a ``#/``-rooted JSON path;
a change is compatible when every difference type is in ``COMPATIBLE_CHANGES``. The update
must accept everything the original accepted (the update is the reader for BACKWARD):

- narrowing a type (number -> integer), changing it, adding a constraint or tightening one
  (``maxLength`` decreased, ``minimum`` increased, ``required`` added, ``enum`` narrowed) is
  incompatible; widening is compatible.
- Open content model (no ``additionalProperties``/``patternProperties``): removing a
  property is compatible, adding one is not unless its schema is empty. Closed model
  (``additionalProperties: false``): adding an optional property is compatible, removing one
  is not. Partially open models check the property against the pattern/additional schema.
- allOf/anyOf/oneOf: criterion changes, more or fewer subschemas, and a maximum matching of
  compatible subschema pairs. A ``not`` compares its schemas the other way round.

Recursive schemas are guarded by an identity-keyed memo (a pair being compared further up
the stack contributes nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from .json_differences import COMPATIBLE_CHANGES, Difference
from .json_model import MISSING, JNode, canonical_json

__all__ = ["COMPATIBLE_CHANGES", "Difference", "diff"]


class _Shared:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], list[Difference]] = {}
        self.in_progress: set[tuple[int, int]] = set()


class _Ctx:
    def __init__(self, shared: _Shared, path: tuple[str, ...] = ()) -> None:
        self.shared = shared
        self.path = list(path)
        self.diffs: list[Difference] = []

    def sub(self) -> _Ctx:
        return _Ctx(self.shared, tuple(self.path))

    @contextmanager
    def at(self, *parts: str) -> Iterator[None]:
        self.path.extend(parts)
        try:
            yield
        finally:
            del self.path[len(self.path) - len(parts):]

    def add(self, kind: str, *attribute: str) -> None:
        self.diffs.append(Difference(kind, (*self.path, *attribute)))

    def compatible(self) -> bool:
        return all(d.compatible for d in self.diffs)


def diff(original: JNode, update: JNode) -> list[Difference]:
    """Every difference from ``original`` to ``update``, compatible ones included."""
    ctx = _Ctx(_Shared())
    _compare(ctx, original, update)
    return ctx.diffs


def _compare(ctx: _Ctx, original: JNode | None, update: JNode | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    if original.kind != "combined" and update.kind == "combined":
        subs = update.subschemas()
        if len(subs) == 1:
            if _try(ctx, original, subs[0]):
                return
        elif update.criterion in ("anyOf", "oneOf"):
            for sub in subs:
                if _try(ctx, original, sub, "SUM_TYPE_EXTENDED"):
                    return
    elif original.kind == "combined" and update.kind != "combined":
        subs = original.subschemas()
        if len(subs) == 1:
            if _try(ctx, subs[0], update):
                return
        elif original.criterion == "allOf":
            for sub in subs:
                if _try(ctx, sub, update, "PRODUCT_TYPE_NARROWED"):
                    return
    if original.kind != update.kind:
        if original.kind != "false" and update.kind != "empty":
            ctx.add("TYPE_CHANGED")
        return
    key = (id(original), id(update))
    if key in ctx.shared.in_progress:
        return
    relative = ctx.shared.memo.get(key)
    if relative is None:
        ctx.shared.in_progress.add(key)
        try:
            fresh = _Ctx(ctx.shared)
            _compare_same_kind(fresh, original, update)
        finally:
            ctx.shared.in_progress.discard(key)
        relative = ctx.shared.memo[key] = fresh.diffs
    ctx.diffs.extend(Difference(d.type, (*ctx.path, *d.path)) for d in relative)


def _try(ctx: _Ctx, original: JNode, update: JNode, extra: str | None = None) -> bool:
    sub = ctx.sub()
    _compare(sub, original, update)
    if not sub.compatible():
        return False
    ctx.diffs.extend(sub.diffs)
    if extra:
        ctx.add(extra)
    return True


def _compare_same_kind(ctx: _Ctx, original: JNode, update: JNode) -> None:
    for key, kind in (("$id", "ID_CHANGED"), ("id", "ID_CHANGED"), ("title", "TITLE_CHANGED"),
                      ("description", "DESCRIPTION_CHANGED"), ("default", "DEFAULT_CHANGED")):
        if original.meta.get(key, MISSING) != update.meta.get(key, MISSING):
            ctx.add(kind)
    compare = _BY_KIND.get(original.kind)
    if compare is not None:
        compare(ctx, original, update)


def _limit(ctx: _Ctx, name: str, before: Any, after: Any, prefix: str) -> None:
    """ADDED/REMOVED/INCREASED/DECREASED for a numeric keyword."""
    if before == after:
        return
    if before is None:
        ctx.add(f"{prefix}_ADDED", name)
    elif after is None:
        ctx.add(f"{prefix}_REMOVED", name)
    elif before < after:
        ctx.add(f"{prefix}_INCREASED", name)
    elif before > after:
        ctx.add(f"{prefix}_DECREASED", name)


def _string(ctx: _Ctx, original: JNode, update: JNode) -> None:
    _limit(ctx, "maxLength", original.get("maxLength"), update.get("maxLength"), "MAX_LENGTH")
    _limit(ctx, "minLength", original.get("minLength"), update.get("minLength"), "MIN_LENGTH")
    before, after = original.get("pattern"), update.get("pattern")
    if before is None and after is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif before is not None and after is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif before != after:
        ctx.add("PATTERN_CHANGED", "pattern")


def _number(ctx: _Ctx, original: JNode, update: JNode) -> None:
    _limit(ctx, "maximum", original.get("maximum"), update.get("maximum"), "MAXIMUM")
    _limit(ctx, "minimum", original.get("minimum"), update.get("minimum"), "MINIMUM")
    _limit(ctx, "exclusiveMaximum", original.get("exclusiveMaximum"),
           update.get("exclusiveMaximum"), "EXCLUSIVE_MAXIMUM")
    _limit(ctx, "exclusiveMinimum", original.get("exclusiveMinimum"),
           update.get("exclusiveMinimum"), "EXCLUSIVE_MINIMUM")
    before, after = original.get("multipleOf"), update.get("multipleOf")
    if before != after:
        if before is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif after is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif (Fraction(str(after)) / Fraction(str(before))).denominator == 1:
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif (Fraction(str(before)) / Fraction(str(after))).denominator == 1:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.get("integer") and not update.get("integer"):
        ctx.add("TYPE_EXTENDED")
    elif update.get("integer") and not original.get("integer"):
        ctx.add("TYPE_NARROWED")


def _enum(ctx: _Ctx, original: JNode, update: JNode) -> None:
    before = {canonical_json(v) for v in original.get("values")}
    after = {canonical_json(v) for v in update.get("values")}
    if before == after:
        return
    if after >= before:
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif before >= after:
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _const(ctx: _Ctx, original: JNode, update: JNode) -> None:
    if canonical_json(original.get("value")) != canonical_json(update.get("value")):
        ctx.add("ENUM_ARRAY_CHANGED", "const")


def _not(ctx: _Ctx, original: JNode, update: JNode) -> None:
    with ctx.at("not"):
        sub = ctx.sub()
        # what the update forbids must be what the original forbade, or less
        _compare(sub, update.child(update.get("schema")), original.child(original.get("schema")))
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")


def _combined(ctx: _Ctx, original: JNode, update: JNode) -> None:
    before, after = original.criterion, update.criterion
    originals, updates = original.subschemas(), update.subschemas()
    if before != after:
        single_before, single_after = len(originals) == 1, len(updates) == 1
        if (after == "anyOf" or (single_before and single_after)
                or (single_before and after == "oneOf") or (single_after and before == "allOf")):
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    if len(originals) < len(updates):  # one more alternative widens, one more conjunct narrows
        ctx.add("PRODUCT_TYPE_EXTENDED" if after == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(originals) > len(updates):
        ctx.add("PRODUCT_TYPE_NARROWED" if before == "allOf" else "SUM_TYPE_NARROWED")
    edges: dict[tuple[int, int], list[Difference]] = {}
    for i, orig in enumerate(originals):
        with ctx.at(before, str(i)):
            for j, upd in enumerate(updates):
                sub = ctx.sub()
                _compare(sub, orig, upd)
                if sub.compatible():
                    edges[(i, j)] = sub.diffs
    matching = _max_matching(len(originals), len(updates), edges)
    for edge in sorted(matching):
        ctx.diffs.extend(edges[edge])
    if len(matching) < min(len(originals), len(updates)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _max_matching(left: int, right: int, edges: dict[tuple[int, int], Any]) -> list[
        tuple[int, int]]:
    """A maximum bipartite matching (augmenting paths)."""
    owner: dict[int, int] = {}

    def assign(i: int, seen: set[int]) -> bool:
        for j in range(right):
            if (i, j) in edges and j not in seen:
                seen.add(j)
                if j not in owner or assign(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(left):
        assign(i, set())
    return [(i, j) for j, i in owner.items()]


def _is_open(node: JNode) -> bool:
    additional = node.get("additional")
    return not node.get("pattern_properties") and additional in (MISSING, True)


def _partial(node: JNode, name: str) -> JNode | None:
    """The schema a partially open object applies to an undeclared property ``name``."""
    for pattern, schema in node.get("pattern_properties").items():
        try:
            if re.search(pattern, name):
                return node.child(schema)
        except re.error:
            continue
    additional = node.get("additional")
    return None if isinstance(additional, bool) else node.child(additional)


def _object(ctx: _Ctx, original: JNode, update: JNode) -> None:
    before_props, after_props = original.get("properties"), update.get("properties")
    before_req, after_req = original.get("required"), update.get("required")
    with ctx.at("required"):
        for name in sorted(before_props):
            if name not in after_props:
                continue
            if name in before_req and name not in after_req:
                ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
            elif name in after_req and name not in before_req:
                with_default = update.child(after_props[name]).has_default
                ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if with_default
                        else "REQUIRED_ATTRIBUTE_ADDED", name)
    with ctx.at("properties"):
        for name in sorted(set(before_props) | set(after_props)):
            with ctx.at(name):
                _property(ctx, original, update, name)
    with ctx.at("dependencies"):
        _dependencies(ctx, original, update)
    with ctx.at("additionalProperties"):
        _additional(ctx, original, update, "PROPERTIES")
    _limit(ctx, "maxProperties", original.get("maxProperties"), update.get("maxProperties"),
           "MAX_PROPERTIES")
    _limit(ctx, "minProperties", original.get("minProperties"), update.get("minProperties"),
           "MIN_PROPERTIES")


def _property(ctx: _Ctx, original: JNode, update: JNode, name: str) -> None:
    before_raw = original.get("properties").get(name, MISSING)
    after_raw = update.get("properties").get(name, MISSING)
    before, after = original.child(before_raw), update.child(after_raw)
    if before is not None and after is not None:
        _compare(ctx, before, after)
    elif before is not None:  # removed: only the update's content model matters
        if _is_open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
        elif (partial := _partial(update, name)) is not None:
            _covered(ctx, before, partial, "PROPERTY_REMOVED")
        elif before.kind == "false":
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    elif after is not None:  # added: only the original's content model matters
        required = name in update.get("required")
        if _is_open(original):
            if after.kind == "empty":
                ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
            elif required:
                ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
                        if after.has_default else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            else:
                ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        if (partial := _partial(original, name)) is not None:
            _covered(ctx, partial, after, "PROPERTY_ADDED")
        if required:
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                    if after.has_default else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")


def _covered(ctx: _Ctx, original: JNode, update: JNode, what: str) -> None:
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.diffs.extend(sub.diffs)
    ctx.add(f"{what}_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible()
            else f"{what}_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _dependencies(ctx: _Ctx, original: JNode, update: JNode) -> None:
    before, after = original.get("dep_arrays"), update.get("dep_arrays")
    for name in sorted(set(before) | set(after)):
        if name not in after:
            ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
        elif name not in before:
            ctx.add("DEPENDENCY_ARRAY_ADDED", name)
        elif set(before[name]) != set(after[name]):
            if set(after[name]) >= set(before[name]):
                ctx.add("DEPENDENCY_ARRAY_EXTENDED", name)
            elif set(before[name]) >= set(after[name]):
                ctx.add("DEPENDENCY_ARRAY_NARROWED", name)
            else:
                ctx.add("DEPENDENCY_ARRAY_CHANGED", name)
    before, after = original.get("dep_schemas"), update.get("dep_schemas")
    for name in sorted(set(before) | set(after)):
        if name not in after:
            ctx.add("DEPENDENCY_SCHEMA_REMOVED", name)
        elif name not in before:
            ctx.add("DEPENDENCY_SCHEMA_ADDED", name)
        else:
            with ctx.at(name):
                _compare(ctx, original.child(before[name]), update.child(after[name]))


def _additional(ctx: _Ctx, original: JNode, update: JNode, what: str) -> None:
    """additionalProperties / additionalItems: allowed at all, and with which schema."""
    before, after = original.get("additional"), update.get("additional")
    before_permits, after_permits = before is not False, after is not False
    before_schema = None if before in (MISSING, True, False) else original.child(before)
    after_schema = None if after in (MISSING, True, False) else update.child(after)
    if before_permits != after_permits:
        ctx.add(f"ADDITIONAL_{what}_ADDED" if after_permits else f"ADDITIONAL_{what}_REMOVED")
    elif before_schema is None and after_schema is not None:
        ctx.add(f"ADDITIONAL_{what}_NARROWED")
    elif after_schema is None and before_schema is not None:
        ctx.add(f"ADDITIONAL_{what}_EXTENDED")
    else:
        _compare(ctx, before_schema, after_schema)


def _array_is_open(node: JNode) -> bool:
    return node.get("additional") in (MISSING, True)


def _array(ctx: _Ctx, original: JNode, update: JNode) -> None:
    with ctx.at("items"):
        _compare(ctx, original.child(original.get("all_items")),
                 update.child(update.get("all_items")))
    before, after = original.get("item_list"), update.get("item_list")
    for index in range(max(len(before), len(after))):
        with ctx.at("items", str(index)):
            if index < len(before) and index < len(after):
                _compare(ctx, original.child(before[index]), update.child(after[index]))
            elif index < len(before):  # item removed: the update's model decides
                item = original.child(before[index])
                if _array_is_open(update):
                    ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
                elif update.get("additional") is not False:
                    _covered(ctx, item, update.child(update.get("additional")), "ITEM_REMOVED")
                elif item.kind == "false":
                    ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
                else:
                    ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
            else:  # item added: the original's model decides
                item = update.child(after[index])
                if _array_is_open(original):
                    ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                            if item.kind == "empty" else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
                elif original.get("additional") is not False:
                    _covered(ctx, original.child(original.get("additional")), item, "ITEM_ADDED")
                else:
                    ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
    with ctx.at("additionalItems"):
        _additional(ctx, original, update, "ITEMS")
    for name, prefix in (("maxItems", "MAX_ITEMS"), ("minItems", "MIN_ITEMS"),
                         ("maxContains", "MAX_CONTAINS"), ("minContains", "MIN_CONTAINS")):
        _limit(ctx, name, original.get(name), update.get(name), prefix)
    if original.get("uniqueItems") != update.get("uniqueItems"):
        ctx.add("UNIQUE_ITEMS_REMOVED" if original.get("uniqueItems") else "UNIQUE_ITEMS_ADDED",
                "uniqueItems")


_BY_KIND = {
    "string": _string,
    "number": _number,
    "enum": _enum,
    "const": _const,
    "not": _not,
    "combined": _combined,
    "object": _object,
    "array": _array,
}
