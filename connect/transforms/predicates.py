"""Kafka's built-in predicates (KIP-585): TopicNameMatches, HasHeaderKey, RecordIsTombstone.

A connector config gates a transformation on a predicate with
``transforms.<alias>.predicate=<predicate alias>`` (and ``negate=true`` to invert it);
``connect.transforms.chain`` applies that rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api.config import CompositeValidator, ConfigDef, ConfigType, Importance, NonEmptyString
from connect.api.record import ConnectRecord
from connect.transforms.base import BuiltinPredicate
from connect.transforms.java_regex import compile_java_regex
from connect.transforms.validators import VALID_REGEX

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]

PATTERN = "pattern"
NAME = "name"


class TopicNameMatches(BuiltinPredicate):
    """True when the whole topic name matches ``pattern``, a Java regular expression."""

    CONFIG_DEF = ConfigDef().define(
        PATTERN,
        ConfigType.STRING,
        validator=CompositeValidator.of(NonEmptyString(), VALID_REGEX),
        importance=Importance.MEDIUM,
        documentation="A Java regular expression matched against the whole topic name.",
    )

    def __init__(self) -> None:
        self._pattern: re.Pattern[str] | None = None

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._pattern = compile_java_regex(self.CONFIG_DEF.parse(configs)[PATTERN])

    def test(self, record: ConnectRecord) -> bool:
        assert self._pattern is not None, "configure() first"
        return self._pattern.fullmatch(record.topic) is not None

    def __repr__(self) -> str:
        pattern = None if self._pattern is None else self._pattern.pattern
        return f"TopicNameMatches(pattern={pattern!r})"


class HasHeaderKey(BuiltinPredicate):
    """True when the record has at least one header named ``name``."""

    CONFIG_DEF = ConfigDef().define(
        NAME,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.MEDIUM,
        documentation="The header name.",
    )

    def __init__(self) -> None:
        self._name = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._name = self.CONFIG_DEF.parse(configs)[NAME]

    def test(self, record: ConnectRecord) -> bool:
        return record.headers.last_with_name(self._name) is not None

    def __repr__(self) -> str:
        return f"HasHeaderKey(name={self._name!r})"


class RecordIsTombstone(BuiltinPredicate):
    """True when the record's value is null (a tombstone)."""

    CONFIG_DEF = ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.CONFIG_DEF.parse(configs)

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone()"
