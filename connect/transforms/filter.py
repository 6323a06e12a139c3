"""Filter: drop every record it is applied to (Kafka's ``Filter``); pair it with a
predicate to drop only some, e.g. tombstones with ``RecordIsTombstone``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef
from connect.transforms.base import BuiltinTransformation, R

__all__ = ["Filter"]


class Filter(BuiltinTransformation):
    """Drops all records; configured only through ``transforms.<alias>.predicate`` and
    ``negate``."""

    CONFIG_DEF = ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.CONFIG_DEF.parse(configs)

    def apply(self, record: R) -> R | None:
        return None
