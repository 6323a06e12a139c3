"""KIP-821 field paths: ``field.syntax.version`` V1 (a top-level name) or V2 (nested).

With V2, ``a.b.c`` walks into struct or map ``a``, then ``b``, to field ``c``. A step
that itself contains dots is wrapped in backticks (```a.b`.c``); a backtick that
would otherwise close a step is kept literally when preceded by a backslash. With V1
the whole text is one field name, as before KIP-821.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from connect.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance
from connect.api.data import Field, Schema, Struct
from connect.api.errors import ConfigError
from connect.transforms.requirements import require_map_or_null, require_struct_or_null

__all__ = ["FIELD_SYNTAX_VERSION_CONFIG", "FieldSyntaxVersion", "SingleFieldPath"]

FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"
_NESTED = "nested field access"


class FieldSyntaxVersion(Enum):
    """How a configured field name is read: V1 top level only, V2 dotted paths."""

    V1 = "V1"
    V2 = "V2"

    @staticmethod
    def define(definition: ConfigDef) -> ConfigDef:
        """Add the ``field.syntax.version`` key (default V1, case-insensitive)."""
        return definition.define(
            FIELD_SYNTAX_VERSION_CONFIG,
            ConfigType.STRING,
            default=FieldSyntaxVersion.V1.value,
            validator=CaseInsensitiveValidString.in_("V1", "V2"),
            importance=Importance.HIGH,
            documentation="Syntax of field paths. V1: a field at the root of the struct or "
            "map. V2: nested fields in dotted notation, with backticks around names that "
            "contain dots, e.g. `foo.bar`.baz for field baz of field 'foo.bar'.",
        )

    @staticmethod
    def from_config(parsed: Mapping[str, Any]) -> FieldSyntaxVersion:
        return FieldSyntaxVersion(str(parsed[FIELD_SYNTAX_VERSION_CONFIG]).upper())


class SingleFieldPath:
    """One path to a field, parsed once at configure time; ``steps`` are the names."""

    __slots__ = ("_steps", "path", "version")

    def __init__(self, path: str, version: FieldSyntaxVersion, *, config_name: str) -> None:
        """Raises ``ConfigError`` naming ``config_name`` for an unbalanced backtick."""
        self.path = path
        self.version = version
        self._steps = (path,) if version is FieldSyntaxVersion.V1 else _parse_v2(path, config_name)

    @property
    def steps(self) -> tuple[str, ...]:
        return self._steps

    def field_from(self, schema: Schema) -> Field | None:
        """The field the path names in ``schema``, or None where a step is missing.
        ``DataError`` if a step before the last is not a struct."""
        current = schema
        for step in self._steps[:-1]:
            found = current.field(step)
            if found is None:
                return None
            current = found.schema
        return current.field(self._steps[-1])

    def value_from_struct(self, struct: Struct, with_default: bool = True) -> Any:
        """The value at the path, or None when a step is missing or null."""
        current: Struct | None = struct
        for step in self._steps[:-1]:
            assert current is not None
            if current.schema.field(step) is None:
                return None
            nested = current.get(step) if with_default else current.get_without_default(step)
            current = require_struct_or_null(nested, _NESTED)
            if current is None:
                return None
        assert current is not None
        last = self._steps[-1]
        if current.schema.field(last) is None:
            return None
        return current.get(last) if with_default else current.get_without_default(last)

    def value_from_map(self, value: Mapping[str, Any]) -> Any:
        """The value at the path in nested maps, or None when a step is missing."""
        current: Mapping[str, Any] | None = value
        for step in self._steps[:-1]:
            assert current is not None
            current = require_map_or_null(current.get(step), _NESTED)
            if current is None:
                return None
        assert current is not None
        return current.get(self._steps[-1])

    def __repr__(self) -> str:
        return f"SingleFieldPath({self.path!r}, {self.version.value})"


def _parse_v2(path: str, config_name: str) -> tuple[str, ...]:
    steps: list[str] = []
    end = len(path)
    i = 0
    while i < end:
        if path[i] != "`":
            dot = path.find(".", i)
            if dot < 0:
                steps.append(path[i:])
                break
            steps.append(path[i:dot])
            i = dot + 1
            continue
        opening = i
        start = i = i + 1
        name: list[str] = []
        while True:
            close = path.find("`", i)
            if close < 0:
                raise _incomplete(path, opening, config_name)
            escaped = path[close - 1] == "\\"
            if close == end - 1:
                if escaped:
                    raise _incomplete(path, opening, config_name)
                name.append(path[start:close])
                i = end
                break
            if path[close + 1] != ".":
                # Only a backtick followed by a dot (or the end) closes the name.
                i = close + 1
                continue
            if escaped:
                name.append(path[start : close - 1] + "`")
                start = i = close + 1
                continue
            name.append(path[start:close])
            i = close + 2
            break
        steps.append("".join(name))
    if path.endswith("."):
        steps.append("")
    return tuple(steps) if steps else ("",)


def _incomplete(path: str, position: int, config_name: str) -> ConfigError:
    return ConfigError(
        config_name,
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before "
        f"backtick at position {position} to escape it",
        value=path,
    )
