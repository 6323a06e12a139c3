"""UppercaseValue: a transform that upper-cases string record values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from connect.api import ConfigDef, ConnectRecord, DataError

__all__ = ["UppercaseValue"]

R = TypeVar("R", bound=ConnectRecord)


class UppercaseValue:
    """Upper-cases a ``str`` value; a null value (tombstone) passes unchanged, and any
    other value is a ``DataError`` (``errors.tolerance`` decides whether the record is
    skipped). Has no config keys. One instance per task, used on its thread only."""

    CONFIG_DEF = ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.CONFIG_DEF.parse(configs)

    def apply(self, record: R) -> R | None:
        if record.value is None:
            return record
        if not isinstance(record.value, str):
            raise DataError(
                f"UppercaseValue transforms string values only; the record from topic "
                f"{record.topic!r} has a {type(record.value).__name__} value. Convert it "
                "with a StringConverter or apply the transform only to string topics."
            )
        return record.new_record(value=record.value.upper())

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def close(self) -> None:
        """Nothing to release."""

    def version(self) -> str:
        return "0.1.0"
