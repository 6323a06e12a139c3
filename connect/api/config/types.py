"""The vocabulary of declared config: value types, importance, width, and masked passwords."""

from __future__ import annotations

import hmac
from enum import Enum
from typing import Any, ClassVar, final

__all__ = ["NO_DEFAULT", "ConfigType", "Importance", "NoDefault", "Password", "Width"]


class ConfigType(Enum):
    """The type of a config value (Kafka's ``ConfigDef.Type``) and the Python type it
    parses to: BOOLEAN bool, STRING str, INT/SHORT/LONG int (32, 16 and 64 bits),
    DOUBLE float, LIST list[str], CLASS a class, PASSWORD ``Password``."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(Enum):
    """How much a user should care about a key; docs list HIGH first."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(Enum):
    """How wide a UI should draw the value's input box."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class NoDefault(Enum):
    """The type of ``NO_DEFAULT``."""

    NO_DEFAULT = "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: Marks a key as required: ``define(..., default=NO_DEFAULT)`` (the default).
NO_DEFAULT = NoDefault.NO_DEFAULT


@final
class Password:
    """A secret config value. ``str``, ``repr``, ``format`` (and so f-strings, ``%``
    formatting and logging) all show ``[hidden]``; only ``.value`` gives the secret.

    Equality compares the secrets in constant time. Immutable and thread-safe.
    """

    HIDDEN: ClassVar[str] = "[hidden]"
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"Password takes a str, not {type(value).__name__}")
        object.__setattr__(self, "_value", value)

    @property
    def value(self) -> str:
        """The secret itself; never log it."""
        return self._value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Password is immutable")

    def __str__(self) -> str:
        return Password.HIDDEN

    def __repr__(self) -> str:
        return Password.HIDDEN

    def __format__(self, format_spec: str) -> str:
        return format(Password.HIDDEN, format_spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Password):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Password, self._value))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Password, (self._value,))
