"""Validators for config values: ranges, allowed strings, non-empty strings, composition.

A validator receives the key's name and its *parsed* value (``None`` when the key is
unset and its default is ``None``) and raises ``ConfigError`` naming the key. ``str()``
of a validator describes the valid values, for documentation and REST output.
Validators are immutable and thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from connect.api.errors import ConfigError

__all__ = [
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "LambdaValidator",
    "NonEmptyString",
    "NonNullValidator",
    "Range",
    "ValidList",
    "ValidString",
    "Validator",
]


@runtime_checkable
class Validator(Protocol):
    """Checks one parsed config value. Called by ``ConfigDef.define`` (on the default),
    ``ConfigDef.parse`` and ``ConfigDef.validate``, on the caller's thread."""

    def ensure_valid(self, name: str, value: Any) -> None:
        """Raise ``ConfigError(name, message, value=value)`` if ``value`` is invalid."""
        ...


@dataclass(frozen=True, slots=True)
class Range:
    """A number within ``[min, max]``; either bound may be None (unbounded)."""

    min: float | None = None
    max: float | None = None

    @staticmethod
    def at_least(min: float) -> Range:
        return Range(min, None)

    @staticmethod
    def between(min: float, max: float) -> Range:
        return Range(min, max)

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigError(name, "Value must be non-null", value=value)
        if self.min is not None and value < self.min:
            raise ConfigError(name, f"Value must be at least {self.min}", value=value)
        if self.max is not None and value > self.max:
            raise ConfigError(name, f"Value must be no more than {self.max}", value=value)

    def __str__(self) -> str:
        low = "..." if self.min is None else f"{self.min},..."
        return f"[{low}]" if self.max is None else f"[{low},{self.max}]"


@dataclass(frozen=True, slots=True)
class ValidString:
    """A string that is one of ``allowed`` (case-sensitive)."""

    allowed: tuple[str, ...]

    @staticmethod
    def in_(*allowed: str) -> ValidString:
        return ValidString(tuple(allowed))

    def ensure_valid(self, name: str, value: Any) -> None:
        if value not in self.allowed:
            raise ConfigError(
                name, f"String must be one of: {', '.join(self.allowed)}", value=value
            )

    def __str__(self) -> str:
        return f"[{', '.join(self.allowed)}]"


@dataclass(frozen=True, slots=True)
class CaseInsensitiveValidString:
    """A string that is one of ``allowed``, ignoring case."""

    allowed: tuple[str, ...]

    @staticmethod
    def in_(*allowed: str) -> CaseInsensitiveValidString:
        return CaseInsensitiveValidString(tuple(allowed))

    def ensure_valid(self, name: str, value: Any) -> None:
        folded = {a.casefold() for a in self.allowed}
        if not isinstance(value, str) or value.casefold() not in folded:
            raise ConfigError(
                name,
                f"String must be one of (case insensitive): {', '.join(self.allowed)}",
                value=value,
            )

    def __str__(self) -> str:
        return f"(case insensitive) [{', '.join(self.allowed)}]"


@dataclass(frozen=True, slots=True)
class ValidList:
    """A list whose every element is one of ``allowed``; empty lists are allowed unless
    ``allow_empty`` is False."""

    allowed: tuple[str, ...]
    allow_empty: bool = True

    @staticmethod
    def in_(*allowed: str, allow_empty: bool = True) -> ValidList:
        return ValidList(tuple(allowed), allow_empty)

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigError(name, "Value must be non-null", value=value)
        if not value and not self.allow_empty:
            raise ConfigError(name, "The list must not be empty", value=",".join(value))
        for element in value:
            if element not in self.allowed:
                raise ConfigError(
                    name,
                    f"Invalid value {element} in the list; each element must be one of: "
                    f"{', '.join(self.allowed)}",
                    value=",".join(str(e) for e in value),
                )

    def __str__(self) -> str:
        return f"[{', '.join(self.allowed)}]"


@dataclass(frozen=True, slots=True)
class NonEmptyString:
    """A string that is not empty; None (an unset optional key) passes."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is not None and (not isinstance(value, str) or value == ""):
            raise ConfigError(name, "String must be non-empty", value=value)

    def __str__(self) -> str:
        return "non-empty string"


@dataclass(frozen=True, slots=True)
class NonNullValidator:
    """Any value but None: the key must be set, or have a non-None default."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigError(name, "Entry must be non null", value=value)

    def __str__(self) -> str:
        return "non-null value"


@dataclass(frozen=True, slots=True)
class CompositeValidator:
    """Every one of ``validators``, in order; the first failure is raised."""

    validators: tuple[Validator, ...]

    @staticmethod
    def of(*validators: Validator) -> CompositeValidator:
        return CompositeValidator(tuple(validators))

    def ensure_valid(self, name: str, value: Any) -> None:
        for validator in self.validators:
            validator.ensure_valid(name, value)

    def __str__(self) -> str:
        return ", ".join(str(v) for v in self.validators)


@dataclass(frozen=True, slots=True)
class LambdaValidator:
    """A validator from a function that raises ``ConfigError``, and its description."""

    check: Callable[[str, Any], None]
    description: str

    @staticmethod
    def with_(check: Callable[[str, Any], None], description: str) -> LambdaValidator:
        return LambdaValidator(check, description)

    def ensure_valid(self, name: str, value: Any) -> None:
        self.check(name, value)

    def __str__(self) -> str:
        return self.description
