"""Config validators the transformations share: non-empty lists and Java regexes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connect.api.errors import ConfigError
from connect.transforms.java_regex import compile_java_regex

__all__ = ["NON_EMPTY_LIST", "VALID_REGEX", "NonEmptyListValidator", "RegexValidator"]


@dataclass(frozen=True, slots=True)
class NonEmptyListValidator:
    """A list with at least one element (Kafka's ``NonEmptyListValidator``)."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if not value:
            shown = None if value is None else ""
            raise ConfigError(name, "Empty list", value=shown)

    def __str__(self) -> str:
        return "non-empty list"


@dataclass(frozen=True, slots=True)
class RegexValidator:
    """A Java regular expression that Python's ``re`` can run (see ``java_regex``)."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            return
        try:
            compile_java_regex(value)
        except ValueError as exc:
            raise ConfigError(name, f"Invalid regex: {exc}", value=value) from None

    def __str__(self) -> str:
        return "valid regex"


NON_EMPTY_LIST = NonEmptyListValidator()
VALID_REGEX = RegexValidator()
