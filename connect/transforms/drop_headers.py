"""DropHeaders: remove headers by name (Kafka's ``DropHeaders``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.header import Headers
from connect.transforms.base import BuiltinTransformation, R
from connect.transforms.validators import NON_EMPTY_LIST

__all__ = ["DropHeaders"]

HEADERS = "headers"

_CONFIG_DEF = ConfigDef().define(
    HEADERS,
    ConfigType.LIST,
    validator=NON_EMPTY_LIST,
    importance=Importance.HIGH,
    documentation="The names of the headers to remove.",
)


class DropHeaders(BuiltinTransformation):
    """Removes every header whose key is listed; the others keep their order."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._names = frozenset(self.CONFIG_DEF.parse(configs)[HEADERS])

    def apply(self, record: R) -> R:
        names = self._names
        kept = Headers(header for header in record.headers if header.key not in names)
        return record.new_record(headers=kept)
