"""The transformation chain of a connector: built from its config, applied per record.

A connector config lists its SMTs and predicates by alias (KIP-66, KIP-585)::

    transforms=route,drop
    transforms.route.type=RegexRouter
    transforms.route.regex=(.*)-raw
    transforms.route.replacement=$1
    transforms.drop.type=Filter
    transforms.drop.predicate=tombstones
    predicates=tombstones
    predicates.tombstones.type=RecordIsTombstone

``build_transformation_chain`` turns that into a ``TransformationChain`` of
``PredicatedTransformation`` stages, or raises a ``ConfigError`` whose ``name`` is the
key the user wrote (``transforms.route.type``, ``transforms.route.regex``,
``predicates.tombstones.type``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from connect.api.config import ConfigDef, ConfigType, parse_value
from connect.api.errors import ConfigError
from connect.api.record import ConnectRecord
from connect.api.transforms import Predicate, Transformation
from connect.transforms.aliases import resolve_predicate, resolve_transform

__all__ = [
    "PREDICATES_CONFIG",
    "TRANSFORMS_CONFIG",
    "PredicatedTransformation",
    "TransformationChain",
    "build_transformation_chain",
]

log = logging.getLogger(__name__)

R = TypeVar("R", bound=ConnectRecord)

TRANSFORMS_CONFIG = "transforms"
PREDICATES_CONFIG = "predicates"
TYPE = "type"
PREDICATE = "predicate"
NEGATE = "negate"


class PredicatedTransformation(Generic[R]):
    """One stage of a chain: ``transformation`` applied only to records for which
    ``predicate.test(record) != negate`` (to every record when there is no predicate).

    Wraps plugins that are already configured, and owns them: ``close()`` closes both.
    Kafka's runtime calls this a transformation stage. Used from the task's thread only.
    """

    __slots__ = ("alias", "negate", "predicate", "transformation")

    def __init__(
        self,
        transformation: Transformation[R],
        predicate: Predicate[R] | None = None,
        negate: bool = False,
        *,
        alias: str = "",
    ) -> None:
        self.transformation = transformation
        self.predicate = predicate
        self.negate = negate
        self.alias = alias

    def applies_to(self, record: R) -> bool:
        return self.predicate is None or self.predicate.test(record) != self.negate

    def apply(self, record: R) -> R | None:
        """The transformed record, the record itself when the predicate says to skip it,
        or None when the transformation drops it."""
        if self.predicate is not None and self.predicate.test(record) == self.negate:
            return record
        return self.transformation.apply(record)

    def config(self) -> ConfigDef:
        return self.transformation.config()

    def close(self) -> None:
        try:
            self.transformation.close()
        finally:
            if self.predicate is not None:
                self.predicate.close()

    def __repr__(self) -> str:
        gate = "" if self.predicate is None else f", predicate={self.predicate!r}"
        negate = ", negate=True" if self.negate else ""
        return f"PredicatedTransformation({self.alias!r}, {self.transformation!r}{gate}{negate})"


class TransformationChain(Generic[R]):
    """The stages of a connector's ``transforms``, applied in order.

    ``apply`` stops at the first stage that drops the record. Errors propagate: the
    runtime decides with ``errors.tolerance`` whether a ``DataError`` skips the record.
    """

    __slots__ = ("stages",)

    def __init__(self, stages: Iterable[PredicatedTransformation[R]] = ()) -> None:
        self.stages: tuple[PredicatedTransformation[R], ...] = tuple(stages)

    def apply(self, record: R) -> R | None:
        for stage in self.stages:
            result = stage.apply(record)
            if result is None:
                return None
            record = result
        return record

    def close(self) -> None:
        """Close every stage, even if one fails; the first failure is re-raised."""
        _close_all(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    def __repr__(self) -> str:
        return f"TransformationChain({list(self.stages)!r})"


def _close_all(plugins: Iterable[Any]) -> None:
    failure: BaseException | None = None
    for plugin in plugins:
        try:
            plugin.close()
        except Exception as exc:  # keep closing the rest; report the first failure
            log.warning("Closing %r failed", plugin, exc_info=True)
            failure = failure or exc
    if failure is not None:
        raise failure


def _aliases(props: Mapping[str, Any], key: str) -> list[str]:
    aliases = parse_value(key, ConfigType.LIST, props.get(key)) or []
    if len(set(aliases)) != len(aliases):
        raise ConfigError(key, "Duplicate alias provided.", value=",".join(aliases))
    if any(not alias for alias in aliases):
        raise ConfigError(key, "Aliases must not be empty.", value=",".join(aliases))
    return aliases


def _with_prefix(props: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {key[len(prefix) :]: value for key, value in props.items() if key.startswith(prefix)}


def _prefixed(error: ConfigError, prefix: str, plugin: str) -> ConfigError:
    """The same error with its key (or, for errors about no single key, the ``type``
    key) written as the user wrote it, under ``prefix``."""
    message = str(error)
    if error.name is None:
        return ConfigError(prefix + TYPE, f"{prefix[:-1]} ({plugin}): {message}")
    name = prefix + error.name
    message = message.replace(f"configuration {error.name}:", f"configuration {name}:")
    message = message.replace(f'"{error.name}"', f'"{name}"')
    return ConfigError(name, message)


def _create(props: Mapping[str, Any], prefix: str, resolve: Any) -> Any:
    type_key = prefix + TYPE
    type_name = props.get(type_key)
    if type_name is None:
        raise ConfigError(
            type_key, f'Missing required configuration "{type_key}" which has no default value.'
        )
    try:
        cls = resolve(type_name)
    except ConfigError as exc:
        raise ConfigError(type_key, str(exc), value=type_name) from exc
    plugin = cls()
    try:
        plugin.configure(_with_prefix(props, prefix))
    except ConfigError as exc:
        _close_all([plugin])
        raise _prefixed(exc, prefix, str(type_name)) from exc
    return plugin


def build_transformation_chain(props: Mapping[str, Any]) -> TransformationChain[Any]:
    """The configured chain of a connector config (strings as in a properties file, or
    typed values). Each stage gets its own transformation and predicate instances, as in
    Kafka. ``ConfigError`` names the offending key; plugins created before the error are
    closed."""
    transform_aliases = _aliases(props, TRANSFORMS_CONFIG)
    predicate_aliases = _aliases(props, PREDICATES_CONFIG)
    # Declared predicates are checked even when no transformation uses them, as Kafka's
    # config validation does.
    for alias in predicate_aliases:
        type_key = f"{PREDICATES_CONFIG}.{alias}.{TYPE}"
        if props.get(type_key) is None:
            raise ConfigError(
                type_key, f'Missing required configuration "{type_key}" which has no default value.'
            )
        try:
            resolve_predicate(props[type_key])
        except ConfigError as exc:
            raise ConfigError(type_key, str(exc), value=props[type_key]) from exc
    stages: list[PredicatedTransformation[Any]] = []
    try:
        for alias in transform_aliases:
            stages.append(_stage(props, alias, predicate_aliases))
    except BaseException:
        _close_all(stages)
        raise
    return TransformationChain(stages)


def _stage(
    props: Mapping[str, Any], alias: str, predicate_aliases: Sequence[str]
) -> PredicatedTransformation[Any]:
    prefix = f"{TRANSFORMS_CONFIG}.{alias}."
    predicate_key, negate_key = prefix + PREDICATE, prefix + NEGATE
    predicate_alias = parse_value(predicate_key, ConfigType.STRING, props.get(predicate_key))
    negate = parse_value(negate_key, ConfigType.BOOLEAN, props.get(negate_key)) or False
    if predicate_alias is not None and predicate_alias not in predicate_aliases:
        raise ConfigError(
            predicate_key,
            f"there is no predicate with alias {predicate_alias} in '{PREDICATES_CONFIG}'",
            value=predicate_alias,
        )
    if predicate_alias is None and negate:
        log.warning(
            "%s is set but %s is not; the transformation applies to every record",
            negate_key,
            predicate_key,
        )
    transformation = _create(props, prefix, resolve_transform)
    predicate = None
    if predicate_alias is not None:
        try:
            predicate = _create(props, f"{PREDICATES_CONFIG}.{predicate_alias}.", resolve_predicate)
        except BaseException:
            _close_all([transformation])
            raise
    return PredicatedTransformation(transformation, predicate, negate, alias=alias)
