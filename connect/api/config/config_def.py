"""ConfigDef: the declared set of config keys of a plugin, with parsing and validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from connect.api.config.parsing import parse_value, to_config_string
from connect.api.config.types import NO_DEFAULT, ConfigType, Importance, Width
from connect.api.config.validators import Validator
from connect.api.errors import ConfigError

__all__ = ["Config", "ConfigDef", "ConfigKey", "ConfigValue", "Recommender"]


@runtime_checkable
class Recommender(Protocol):
    """Computes a key's valid values and visibility from the other keys' parsed values,
    e.g. to list the tables of the configured database. Called by ``ConfigDef.validate``
    on the caller's thread (the REST validate request); may block briefly; raise
    ``ConfigError`` to report a problem on the key."""

    def valid_values(self, name: str, parsed_config: Mapping[str, Any]) -> list[Any]:
        """The values ``name`` may take, given the other parsed values."""
        ...

    def visible(self, name: str, parsed_config: Mapping[str, Any]) -> bool:
        """Whether ``name`` applies, given the other parsed values."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigKey:
    """One declared key. ``default`` is already parsed; ``NO_DEFAULT`` makes the key
    required. ``order_in_group`` is -1 when unordered; ``display_name`` defaults to
    the name."""

    name: str
    type: ConfigType
    documentation: str
    importance: Importance
    default: Any = NO_DEFAULT
    validator: Validator | None = None
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str = ""
    dependents: tuple[str, ...] = ()
    recommender: Recommender | None = None

    def __post_init__(self) -> None:
        if not self.display_name:
            object.__setattr__(self, "display_name", self.name)

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def describe(self) -> dict[str, Any]:
        """The key as ``GET /connector-plugins/{plugin}/config`` shows it: Kafka's
        ``ConfigKeyInfo`` fields, the order in group serialized as ``order``, and a
        password's default as ``[hidden]``."""
        return {
            "name": self.name,
            "type": self.type.value,
            "required": not self.has_default,
            "default_value": to_config_string(self.default, self.type)
            if self.has_default
            else None,
            "importance": self.importance.value,
            "documentation": self.documentation,
            "group": self.group,
            "width": self.width.value,
            "display_name": self.display_name,
            "dependents": list(self.dependents),
            "order": self.order_in_group,
        }


@dataclasses.dataclass(slots=True)
class ConfigValue:
    """The outcome of validating one key: its parsed value (None if it failed to parse),
    the values a recommender suggests, every error found, and whether it applies.

    Mutable: a connector's ``validate()`` may add errors or recommendations. A password's
    value is a ``Password``, so printing a ConfigValue never shows the secret.
    """

    name: str
    value: Any = None
    recommended_values: list[Any] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    visible: bool = True

    def add_error_message(self, message: str) -> None:
        self.errors.append(message)


@dataclasses.dataclass(slots=True)
class Config:
    """What ``Connector.validate()`` returns: one ``ConfigValue`` per key."""

    config_values: list[ConfigValue]

    @property
    def error_count(self) -> int:
        """The number of error messages over all keys."""
        return sum(len(v.errors) for v in self.config_values)

    def add_error(self, key: str | None, message: str, fallback: str | None = None) -> None:
        """Record ``message`` (e.g. a cross-key ``ConfigError`` found by a connector's
        ``validate()``) on ``key``'s ConfigValue; when ``key`` is None or not in this
        config, on ``fallback``'s, else on the first key's, so no error is dropped."""
        by_name = {v.name: v for v in self.config_values}
        target = (by_name.get(key) if key is not None else None) \
            or (by_name.get(fallback) if fallback is not None else None)
        if target is None:
            if not self.config_values:
                raise KeyError(f"no config key to report {message!r} on")
            target = self.config_values[0]
        target.add_error_message(message)


class ConfigDef:
    """The set of config keys a connector, converter, transformation or the runtime
    accepts: for each its type, default, validator, importance, documentation and
    placement in a UI. Declare once, as a class attribute; then ``parse`` at the edge,
    ``validate`` for the REST validate endpoint, ``describe`` for the plugin config
    endpoint and reference docs.

    Defining is not thread-safe; once defined, a ConfigDef is only read and may be
    shared between threads.
    """

    __slots__ = ("_groups", "_keys")

    def __init__(self, base: ConfigDef | None = None) -> None:
        """An empty definition, or a copy of ``base`` to extend."""
        self._keys: dict[str, ConfigKey] = dict(base._keys) if base is not None else {}
        self._groups: list[str] = list(base._groups) if base is not None else []

    def define(
        self,
        name: str,
        type: ConfigType,
        *,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance,
        documentation: str,
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Iterable[str] = (),
        recommender: Recommender | None = None,
    ) -> ConfigDef:
        """Declare a key; returns self so definitions chain. The default is given typed
        or in string form; it is parsed and checked by the validator now, so a broken
        definition fails at import time rather than when a user configures a plugin."""
        return self.define_key(
            ConfigKey(
                name=name,
                type=type,
                documentation=documentation,
                importance=importance,
                default=default,
                validator=validator,
                group=group,
                order_in_group=order_in_group,
                width=width,
                display_name=display_name or name,
                dependents=tuple(dependents),
                recommender=recommender,
            )
        )

    def define_key(self, key: ConfigKey) -> ConfigDef:
        """Declare a prepared ``ConfigKey``; returns self."""
        if key.name in self._keys:
            raise ConfigError(key.name, f"Configuration {key.name} is defined twice.")
        if key.has_default:
            default = parse_value(key.name, key.type, key.default)
            if key.validator is not None:
                key.validator.ensure_valid(key.name, default)
            key = dataclasses.replace(key, default=default)
        self._keys[key.name] = key
        if key.group is not None and key.group not in self._groups:
            self._groups.append(key.group)
        return self

    @property
    def config_keys(self) -> Mapping[str, ConfigKey]:
        """The keys by name, in definition order (read-only)."""
        return MappingProxyType(self._keys)

    def names(self) -> list[str]:
        return list(self._keys)

    def groups(self) -> list[str]:
        """Group names in the order they were first used."""
        return list(self._groups)

    def default_values(self) -> dict[str, Any]:
        """The parsed default of every key that has one."""
        return {k.name: k.default for k in self._keys.values() if k.has_default}

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values of every defined key: the given value, parsed, or the default.

        Keys not defined are ignored. Raises ``ConfigError`` naming the first missing
        required key or invalid value (use ``validate`` to collect every problem).
        """
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            if key.name in props:
                value = parse_value(key.name, key.type, props[key.name])
            elif key.has_default:
                value = key.default
            else:
                raise ConfigError(key.name, _missing(key.name))
            if key.validator is not None:
                key.validator.ensure_valid(key.name, value)
            parsed[key.name] = value
        return parsed

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """A ``ConfigValue`` per defined key, in definition order, with *every* problem
        found: missing required keys, unparseable values, validator failures and
        recommender errors (Kafka's ``ConfigDef.validateAll``). Never raises for bad
        input. Keys named as dependents but not defined are reported too."""
        values = {name: ConfigValue(name) for name in self._keys}
        for key in self._keys.values():
            for dependent in key.dependents:
                if dependent not in self._keys and dependent not in values:
                    values[dependent] = ConfigValue(
                        dependent,
                        errors=[f"{dependent} is referred in the dependents, but not defined."],
                        visible=False,
                    )
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            parsed[key.name] = self._validate_value(key, props, values[key.name])
        for key in self._keys.values():
            if key.recommender is not None:
                _recommend(key, parsed, values[key.name])
        return list(values.values())

    @staticmethod
    def _validate_value(key: ConfigKey, props: Mapping[str, Any], out: ConfigValue) -> Any:
        if key.name in props:
            try:
                value = parse_value(key.name, key.type, props[key.name])
            except ConfigError as exc:
                out.add_error_message(str(exc))
                return None
        elif key.has_default:
            value = key.default
        else:
            out.add_error_message(_missing(key.name))
            return None
        out.value = value
        if key.validator is not None:
            try:
                key.validator.ensure_valid(key.name, value)
            except ConfigError as exc:
                out.add_error_message(str(exc))
        return value

    def describe(self) -> list[dict[str, Any]]:
        """Every key as a JSON-able dict (see ``ConfigKey.describe``), in definition
        order, as ``GET /connector-plugins/{plugin}/config`` returns them."""
        return [key.describe() for key in self._keys.values()]

    def embed(
        self, key_prefix: str, group_prefix: str, starting_order: int, child: ConfigDef
    ) -> ConfigDef:
        """Add ``child``'s keys under ``key_prefix`` (e.g. ``transforms.route.``), in
        group ``group_prefix`` (plus ``": " + group`` for grouped keys), ordered from
        ``starting_order``; returns self. The runtime builds a connector's full
        definition this way from its transformations' and predicates' definitions.

        Validators see the prefixed name, so errors name the key the user wrote;
        recommenders see unprefixed names and values, as the child defined them.
        """
        order = starting_order
        for key in child._keys.values():
            self.define_key(
                dataclasses.replace(
                    key,
                    name=key_prefix + key.name,
                    display_name=key.display_name
                    if key.display_name != key.name
                    else key_prefix + key.name,
                    group=group_prefix + (f": {key.group}" if key.group else ""),
                    order_in_group=order,
                    dependents=tuple(key_prefix + d for d in key.dependents),
                    recommender=_PrefixedRecommender(key_prefix, key.recommender)
                    if key.recommender is not None
                    else None,
                )
            )
            order += 1
        return self

    def __repr__(self) -> str:
        return f"ConfigDef({', '.join(self._keys)})"


def _missing(name: str) -> str:
    return f'Missing required configuration "{name}" which has no default value.'


def _recommend(key: ConfigKey, parsed: Mapping[str, Any], out: ConfigValue) -> None:
    assert key.recommender is not None
    try:
        out.recommended_values = list(key.recommender.valid_values(key.name, parsed))
        out.visible = bool(key.recommender.visible(key.name, parsed))
    except ConfigError as exc:
        out.add_error_message(str(exc))


@dataclasses.dataclass(frozen=True, slots=True)
class _PrefixedRecommender:
    prefix: str
    inner: Recommender

    def _unprefixed(self, parsed: Mapping[str, Any]) -> dict[str, Any]:
        size = len(self.prefix)
        return {k[size:]: v for k, v in parsed.items() if k.startswith(self.prefix)}

    def valid_values(self, name: str, parsed_config: Mapping[str, Any]) -> list[Any]:
        return self.inner.valid_values(name[len(self.prefix) :], self._unprefixed(parsed_config))

    def visible(self, name: str, parsed_config: Mapping[str, Any]) -> bool:
        return self.inner.visible(name[len(self.prefix) :], self._unprefixed(parsed_config))
