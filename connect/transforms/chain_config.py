"""The declared config of a connector's ``transforms`` and ``predicates`` keys, for
validation (Kafka's ``EnrichedConnectorConfig``).

``ConnectorConfig`` cannot declare ``transforms.route.regex`` statically: which keys
exist depends on the aliases and types the config names. ``chain_config_def(props)``
declares them for one config: the two alias lists, each alias's ``type`` (and, for
transformations, ``predicate`` and ``negate``), and every key the named plugin declares,
embedded under its prefix. ``ConfigDef.validate(props)`` on the result then reports every
problem at once, each on the key the user wrote, as ``PUT
/connector-plugins/{type}/config/validate`` needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, LambdaValidator, parse_value
from connect.api.errors import ConfigError
from connect.transforms.aliases import resolve_predicate, resolve_transform
from connect.transforms.chain import NEGATE, PREDICATE, PREDICATES_CONFIG, TRANSFORMS_CONFIG, TYPE

__all__ = ["chain_config_def"]


def _unique_aliases(name: str, value: Any) -> None:
    if value is not None and len(set(value)) != len(value):
        raise ConfigError(name, "Duplicate alias provided.", value=",".join(value))


_UNIQUE = LambdaValidator.with_(_unique_aliases, "unique aliases")


def _aliases(props: Mapping[str, Any], key: str) -> list[str]:
    """The aliases in ``key``, once each; an unparseable list declares none (its own
    validation reports the problem)."""
    try:
        aliases = parse_value(key, ConfigType.LIST, props.get(key)) or []
    except ConfigError:
        return []
    return list(dict.fromkeys(alias for alias in aliases if alias))


def chain_config_def(props: Mapping[str, Any], base: ConfigDef | None = None) -> ConfigDef:
    """``base`` (e.g. the connector's own definition) extended with the transformation
    and predicate keys ``props`` implies. Keys ``base`` already declares are kept."""
    definition = ConfigDef(base)
    lists = (
        (TRANSFORMS_CONFIG, "Aliases of the transformations to apply to records, in order."),
        (PREDICATES_CONFIG, "Aliases of the predicates used by the transformations."),
    )
    for key, documentation in lists:
        if key not in definition.config_keys:
            definition.define(
                key,
                ConfigType.LIST,
                default=[],
                validator=_UNIQUE,
                importance=Importance.LOW,
                documentation=documentation,
                group=key.capitalize(),
            )
    predicate_aliases = _aliases(props, PREDICATES_CONFIG)
    for alias in _aliases(props, TRANSFORMS_CONFIG):
        prefix = f"{TRANSFORMS_CONFIG}.{alias}."
        group = f"Transforms: {alias}"
        _define_plugin(definition, props, prefix, group, resolve_transform, "transformation")
        definition.define(
            prefix + PREDICATE,
            ConfigType.STRING,
            default=None,
            validator=LambdaValidator.with_(
                _predicate_alias_check(predicate_aliases), "an alias listed in predicates"
            ),
            importance=Importance.MEDIUM,
            documentation="The alias of the predicate deciding whether the transformation "
            "applies to a record.",
            group=group,
        )
        definition.define(
            prefix + NEGATE,
            ConfigType.BOOLEAN,
            default=False,
            importance=Importance.MEDIUM,
            documentation="Apply the transformation to the records the predicate does not match.",
            group=group,
        )
    for alias in predicate_aliases:
        prefix = f"{PREDICATES_CONFIG}.{alias}."
        _define_plugin(
            definition, props, prefix, f"Predicates: {alias}", resolve_predicate, "predicate"
        )
    return definition


def _predicate_alias_check(aliases: list[str]) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and value not in aliases:
            raise ConfigError(
                name,
                f"there is no predicate with alias {value} in '{PREDICATES_CONFIG}'",
                value=value,
            )

    return check


def _define_plugin(
    definition: ConfigDef,
    props: Mapping[str, Any],
    prefix: str,
    group: str,
    resolve: Callable[[Any], type],
    kind: str,
) -> None:
    def check_type(name: str, value: Any) -> None:
        if value is None:
            return
        try:
            resolve(value)
        except ConfigError as exc:
            raise ConfigError(name, str(exc), value=value) from None

    definition.define(
        prefix + TYPE,
        ConfigType.STRING,
        validator=LambdaValidator.with_(check_type, f"a {kind} name or class"),
        importance=Importance.HIGH,
        documentation=f"The {kind}: a built-in name, Kafka's class name, an entry point "
        "name or module:Class.",
        group=group,
    )
    try:
        plugin_class = resolve(props.get(prefix + TYPE))
    except ConfigError:
        return  # reported on the type key by its validator
    plugin_def = plugin_class().config()
    # The plugin's own keys, minus any that would clash with the stage keys above.
    reserved = {TYPE, PREDICATE, NEGATE}
    child = ConfigDef()
    for key in plugin_def.config_keys.values():
        if key.name not in reserved:
            child.define_key(key)
    definition.embed(prefix, group, 0, child)
