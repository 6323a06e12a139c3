"""The vocabulary of JSON Schema differences: Confluent's type names, which are compatible
(its default STRICT policy), and the verbose messages Confluent returns for them."""

from __future__ import annotations

from dataclasses import dataclass

COMPATIBLE_CHANGES = frozenset({
    "ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED", "SCHEMA_REMOVED",
    "TYPE_EXTENDED",
    "MAX_LENGTH_INCREASED", "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED", "MIN_LENGTH_REMOVED",
    "PATTERN_REMOVED",
    "MAXIMUM_INCREASED", "MAXIMUM_REMOVED", "MINIMUM_DECREASED", "MINIMUM_REMOVED",
    "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MINIMUM_DECREASED",
    "EXCLUSIVE_MINIMUM_REMOVED", "MULTIPLE_OF_REDUCED", "MULTIPLE_OF_REMOVED",
    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "REQUIRED_ATTRIBUTE_REMOVED",
    "DEPENDENCY_ARRAY_NARROWED", "DEPENDENCY_ARRAY_REMOVED", "DEPENDENCY_SCHEMA_REMOVED",
    "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED", "MIN_PROPERTIES_DECREASED",
    "MIN_PROPERTIES_REMOVED", "ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED",
    "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "MAX_ITEMS_INCREASED", "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED",
    "MAX_CONTAINS_INCREASED", "MAX_CONTAINS_REMOVED", "MIN_CONTAINS_DECREASED",
    "MIN_CONTAINS_REMOVED",
    "UNIQUE_ITEMS_REMOVED", "ADDITIONAL_ITEMS_ADDED", "ADDITIONAL_ITEMS_EXTENDED",
    "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
    "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
    "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED",
    "SUM_TYPE_EXTENDED", "NOT_TYPE_NARROWED",
})


@dataclass(frozen=True)
class Difference:
    type: str
    path: tuple[str, ...]

    @property
    def pointer(self) -> str:
        return "#/" + "/".join(self.path)

    @property
    def compatible(self) -> bool:
        return self.type in COMPATIBLE_CHANGES

    def describe(self, update_role: str, original_role: str) -> str:
        """Confluent's verbose message; the roles name the updated and original schema."""
        text = _template(self.type).format(path=self.pointer)
        roles = iter((update_role, original_role))
        text = "".join(next(roles) if c == "\0" else c for c in text.replace("%s", "\0"))
        return f'{{errorType:"{self.type}", description:"{text}"}}'


_KEYWORD_ADDED = {
    "MAXIMUM_ADDED", "MINIMUM_ADDED", "EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MINIMUM_ADDED",
    "MULTIPLE_OF_ADDED", "MAX_LENGTH_ADDED", "MIN_LENGTH_ADDED", "PATTERN_ADDED",
    "REQUIRED_ATTRIBUTE_ADDED", "MAX_PROPERTIES_ADDED", "MIN_PROPERTIES_ADDED",
    "DEPENDENCY_ARRAY_ADDED", "DEPENDENCY_SCHEMA_ADDED", "MAX_ITEMS_ADDED", "MIN_ITEMS_ADDED",
    "MAX_CONTAINS_ADDED", "MIN_CONTAINS_ADDED", "UNIQUE_ITEMS_ADDED", "ADDITIONAL_ITEMS_REMOVED",
    "ADDITIONAL_PROPERTIES_REMOVED",
}
_TEMPLATES = [
    (_KEYWORD_ADDED, "The keyword at path '{path}' in the %s schema is not present in the %s "
                     "schema"),
    ({"MIN_LENGTH_INCREASED", "MINIMUM_INCREASED", "EXCLUSIVE_MINIMUM_INCREASED",
      "MIN_PROPERTIES_INCREASED", "MULTIPLE_OF_EXPANDED", "MIN_ITEMS_INCREASED",
      "MIN_CONTAINS_INCREASED"},
     "The value at path '{path}' in the %s schema is more than its value in the %s schema"),
    ({"MAX_LENGTH_DECREASED", "MAXIMUM_DECREASED", "MAX_ITEMS_DECREASED",
      "MAX_CONTAINS_DECREASED", "EXCLUSIVE_MAXIMUM_DECREASED", "MAX_PROPERTIES_DECREASED"},
     "The value at path '{path}' in the %s schema is less than its value in the %s schema"),
    ({"PATTERN_CHANGED", "MULTIPLE_OF_CHANGED", "DEPENDENCY_ARRAY_CHANGED"},
     "The value at path '{path}' is different between the %s and %s schema"),
    ({"ADDITIONAL_ITEMS_NARROWED", "ENUM_ARRAY_NARROWED", "SUM_TYPE_NARROWED",
      "ADDITIONAL_PROPERTIES_NARROWED"},
     "An array or combined type at path '{path}' has fewer elements in the %s schema than the "
     "%s schema"),
    ({"DEPENDENCY_ARRAY_EXTENDED", "PRODUCT_TYPE_EXTENDED", "SUM_TYPE_EXTENDED",
      "NOT_TYPE_EXTENDED"},
     "An array or combined type at path '{path}' has more elements in the %s schema than the "
     "%s schema"),
    ({"TYPE_CHANGED", "TYPE_NARROWED", "COMBINED_TYPE_CHANGED",
      "COMBINED_TYPE_SUBSCHEMAS_CHANGED", "ENUM_ARRAY_CHANGED"},
     "A type at path '{path}' is different between the %s schema and the %s schema"),
    ({"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
      "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
      "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"},
     "The %s schema has an open content model and has a property or item at path '{path}' "
     "which is missing in the %s schema"),
    ({"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
     "The %s schema has an unopen content model and has a required property at path '{path}' "
     "which is missing in the %s schema"),
    ({"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
     "The %s schema has a closed content model and is missing a property or item present at "
     "path '{path}' in the %s schema"),
    ({"PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
      "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
     "A property or item is missing in the %s schema but present at path '{path}' in the %s "
     "schema and is not covered by its partially open content model"),
    ({"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
      "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
     "The %s schema has a property or item at path '{path}' which is missing in the %s schema "
     "and is not covered by its partially open content model"),
    ({"SCHEMA_ADDED"},
     "The %s schema has a schema at path '{path}' which is missing in the %s schema"),
]


def _template(kind: str) -> str:
    for kinds, template in _TEMPLATES:
        if kind in kinds:
            return template
    return "A change at path '{path}' in the %s schema is not accepted by the %s schema"
