"""AbstractConfig: a plugin's config parsed once into typed, read-only values."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from connect.api.config.config_def import ConfigDef
from connect.api.config.types import ConfigType, Password
from connect.api.errors import ConfigError

__all__ = ["AbstractConfig"]


class AbstractConfig:
    """Typed access to a config parsed against a ``ConfigDef`` (Kafka's AbstractConfig).

    Subclass it per plugin so the rest of the plugin never sees raw strings::

        class FileSourceConfig(AbstractConfig):
            CONFIG_DEF = ConfigDef().define("file", ConfigType.STRING, ...)

            def __init__(self, props: Mapping[str, str]) -> None:
                super().__init__(self.CONFIG_DEF, props)

    Construction raises ``ConfigError`` naming the first bad key. The typed getters
    check the key's declared type and return None only for a key whose value and
    default are None. Immutable once built, so safe to share between threads. ``repr``
    shows parsed values, where passwords are ``[hidden]``; ``originals()`` holds what the
    user gave, secrets included, so never log it.
    """

    __slots__ = ("_definition", "_originals", "_values")

    def __init__(self, definition: ConfigDef, originals: Mapping[str, Any]) -> None:
        self._definition = definition
        self._originals = MappingProxyType(dict(originals))
        self._values = MappingProxyType(definition.parse(originals))

    @property
    def definition(self) -> ConfigDef:
        return self._definition

    def get(self, name: str) -> Any:
        """The parsed value of a defined key."""
        if name not in self._values:
            raise ConfigError(name, f"Unknown configuration '{name}': it is not defined.")
        return self._values[name]

    def _typed(self, name: str, getter: str, *types: ConfigType) -> Any:
        value = self.get(name)
        declared = self._definition.config_keys[name].type
        if declared not in types:
            raise ConfigError(
                name,
                f"Configuration '{name}' is declared {declared.value}; {getter}() reads "
                f"{' or '.join(t.value for t in types)} keys.",
            )
        return value

    def get_boolean(self, name: str) -> bool | None:
        return self._typed(name, "get_boolean", ConfigType.BOOLEAN)

    def get_int(self, name: str) -> int | None:
        """The value of an INT, SHORT or LONG key."""
        return self._typed(name, "get_int", ConfigType.INT, ConfigType.SHORT, ConfigType.LONG)

    def get_double(self, name: str) -> float | None:
        return self._typed(name, "get_double", ConfigType.DOUBLE)

    def get_string(self, name: str) -> str | None:
        return self._typed(name, "get_string", ConfigType.STRING)

    def get_list(self, name: str) -> list[str] | None:
        value = self._typed(name, "get_list", ConfigType.LIST)
        return list(value) if value is not None else None

    def get_password(self, name: str) -> Password | None:
        return self._typed(name, "get_password", ConfigType.PASSWORD)

    def get_class(self, name: str) -> type | None:
        return self._typed(name, "get_class", ConfigType.CLASS)

    def values(self) -> dict[str, Any]:
        """Every defined key's parsed value."""
        return dict(self._values)

    def originals(self) -> dict[str, Any]:
        """The config as given, including keys not defined (e.g. for sub-components)."""
        return dict(self._originals)

    def originals_with_prefix(self, prefix: str, *, strip: bool = True) -> dict[str, Any]:
        """The original entries whose key starts with ``prefix``, by default with the
        prefix removed (``key.converter.schemas.enable`` -> ``schemas.enable``)."""
        return {
            (key[len(prefix) :] if strip else key): value
            for key, value in self._originals.items()
            if key.startswith(prefix)
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AbstractConfig):
            return NotImplemented
        return type(self) is type(other) and self._originals == other._originals

    def __hash__(self) -> int:
        return hash((type(self), frozenset(self._originals)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._values)!r})"
