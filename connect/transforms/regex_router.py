"""RegexRouter: rename the topic with a regular expression and replacement (Kafka's
``RegexRouter``), e.g. ``(.*)-raw`` to ``$1-clean``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.errors import ConfigError
from connect.transforms.base import BuiltinTransformation, R
from connect.transforms.java_regex import JavaReplacement, compile_java_regex
from connect.transforms.validators import VALID_REGEX

__all__ = ["RegexRouter"]

REGEX = "regex"
REPLACEMENT = "replacement"

_CONFIG_DEF = (
    ConfigDef()
    .define(
        REGEX,
        ConfigType.STRING,
        validator=VALID_REGEX,
        importance=Importance.HIGH,
        documentation="Java regular expression the whole topic name must match.",
    )
    .define(
        REPLACEMENT,
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="Replacement string, with Java's group references ($1, ${name}).",
    )
)


class RegexRouter(BuiltinTransformation):
    """If the regex matches the whole topic (Java's ``Matcher.matches()``), the topic
    becomes ``Matcher.replaceFirst(replacement)``; other records pass unchanged."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._regex: re.Pattern[str] = re.compile("")
        self._replacement = JavaReplacement(())

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._regex = compile_java_regex(parsed[REGEX])
        try:
            self._replacement = JavaReplacement.parse(parsed[REPLACEMENT], self._regex)
        except ValueError as exc:
            raise ConfigError(REPLACEMENT, str(exc), value=parsed[REPLACEMENT]) from None

    def apply(self, record: R) -> R:
        if self._regex.fullmatch(record.topic) is None:
            return record
        # replaceFirst searches again from the start, so with alternations the replaced
        # match may be shorter than the full match (as in Java).
        topic = self._regex.sub(self._replacement.expand, record.topic, count=1)
        return record.new_record(topic=topic)
