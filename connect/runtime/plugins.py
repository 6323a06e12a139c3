"""Plugin discovery: connectors, converters, transforms, predicates and config providers.

Plugins register under the entry-point groups ``ferry.connectors``, ``ferry.converters``,
``ferry.transforms``, ``ferry.predicates`` and ``ferry.config_providers``. A
``connector.class`` may name a connector by any of (tried in order):

* its entry-point name (``FileStreamSource``);
* its class name or Kafka's alias without ``Connector`` (``FileStreamSourceConnector``,
  ``FileStreamSource``), matched against every discovered connector;
* Kafka's fully qualified class name of a built-in
  (``org.apache.kafka.connect.file.FileStreamSourceConnector``): the part after the last
  dot is matched like a class name;
* ``module:Class`` or a dotted ``module.Class`` path.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Callable
from typing import Any

from connect.api.config_provider import ConfigProvider
from connect.api.connector import Connector
from connect.api.errors import ConfigError, NotFoundError
from connect.api.sink import SinkConnector
from connect.api.source import SourceConnector
from connect.converters.aliases import BUILTIN_CONVERTERS
from connect.runtime.herder import PluginInfo
from connect.transforms.aliases import PREDICATES, TRANSFORMATIONS

__all__ = ["Plugins", "connector_type"]

log = logging.getLogger(__name__)

CONNECTORS_GROUP = "ferry.connectors"
CONFIG_PROVIDERS_GROUP = "ferry.config_providers"
#: Providers built into the runtime, resolvable without distribution metadata.
BUILTIN_CONFIG_PROVIDERS = {
    "file": "connect.runtime.config_providers:FileConfigProvider",
    "env": "connect.runtime.config_providers:EnvVarConfigProvider",
    "FileConfigProvider": "connect.runtime.config_providers:FileConfigProvider",
    "EnvVarConfigProvider": "connect.runtime.config_providers:EnvVarConfigProvider",
    "org.apache.kafka.common.config.provider.FileConfigProvider":
        "connect.runtime.config_providers:FileConfigProvider",
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider":
        "connect.runtime.config_providers:EnvVarConfigProvider",
}


def connector_type(cls: type) -> str:
    """``source``, ``sink`` or ``unknown``, as the REST API reports it."""
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return "unknown"


def _import(target: str) -> Any:
    module, sep, attr = target.partition(":")
    if not sep:
        module, _, attr = target.rpartition(".")
    if not module or not attr:
        raise ImportError(f"{target!r} is not a module:Class path")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _strip(name: str) -> str:
    return name[: -len("Connector")] if name.endswith("Connector") else name


class Plugins:
    """What is installed, read once from the entry points (``refresh()`` re-reads).
    Thread-safe after construction: only read."""

    def __init__(self, extra_connectors: dict[str, type] | None = None) -> None:
        #: Classes registered in code (tests, embedding applications) by name.
        self._extra = dict(extra_connectors or {})
        self._connector_eps: dict[str, importlib.metadata.EntryPoint] = {}
        self.refresh()

    def refresh(self) -> None:
        self._connector_eps = {ep.name: ep for ep in
                               importlib.metadata.entry_points(group=CONNECTORS_GROUP)}

    def register_connector(self, cls: type, name: str | None = None) -> None:
        """Make ``cls`` resolvable by ``name`` (default: its class name) and its aliases."""
        self._extra[name or cls.__name__] = cls

    def _connector_classes(self) -> dict[str, type]:
        """Every loadable connector by entry-point (or registered) name."""
        found: dict[str, type] = {}
        for name, ep in self._connector_eps.items():
            try:
                found[name] = ep.load()
            except Exception:  # one broken distribution must not hide the others
                log.warning("connector plugin %s (%s) failed to load", name, ep.value,
                            exc_info=True)
        found.update(self._extra)
        return {n: c for n, c in found.items()
                if isinstance(c, type) and issubclass(c, Connector)}

    def connector_class(self, name: str) -> type[Connector]:
        """The class ``connector.class`` names; ``ConfigError`` naming the key if none."""
        text = str(name).strip()
        classes = self._connector_classes()
        if text in classes:
            return classes[text]
        simple = text.rpartition(".")[2] if ":" not in text else ""
        for candidate in (text, simple):
            if not candidate:
                continue
            for entry_name, cls in classes.items():
                names = {entry_name, _strip(entry_name), cls.__name__, _strip(cls.__name__)}
                if candidate in names or _strip(candidate) in names:
                    return cls
        if "." in text or ":" in text:
            try:
                cls = _import(text)
            except (ImportError, AttributeError) as exc:
                raise ConfigError("connector.class", f"cannot import it: {exc}",
                                  value=text) from exc
            if isinstance(cls, type) and issubclass(cls, Connector):
                return cls
            raise ConfigError("connector.class", "it is not a Connector subclass", value=text)
        known = ", ".join(sorted(classes)) or "none installed"
        raise ConfigError("connector.class",
                          f"Class {text} could not be found; installed connectors: {known}",
                          value=text)

    def new_connector(self, name: str) -> Connector:
        return self.connector_class(name)()

    def config_provider_class(self, name: str) -> type:
        """A config provider by entry-point name, built-in alias or class path."""
        eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=CONFIG_PROVIDERS_GROUP)}
        try:
            if name in eps:
                cls = eps[name].load()
            else:
                cls = _import(BUILTIN_CONFIG_PROVIDERS.get(name, name))
        except (ImportError, AttributeError) as exc:
            raise ConfigError(None, f"config provider {name!r} could not be loaded: {exc}") \
                from exc
        if not isinstance(cls, type) or not issubclass(cls, ConfigProvider):
            raise ConfigError(None, f"{name!r} is not a ConfigProvider")
        return cls

    # ------------------------------------------------------------------ REST listing
    def plugin_infos(self, connectors_only: bool = True) -> list[PluginInfo]:
        """``GET /connector-plugins``: connectors, and with ``connectors_only=False`` also
        transformations, predicates, converters and header converters."""
        unique = {id(c): c for c in self._connector_classes().values()}.values()
        infos = [PluginInfo(_qualname(cls), connector_type(cls), _version(cls))
                 for cls in unique]
        if not connectors_only:
            for cls in TRANSFORMATIONS.values():
                infos.append(PluginInfo(_qualname(cls), "transformation", None))
            for cls in PREDICATES.values():
                infos.append(PluginInfo(_qualname(cls), "predicate", None))
            for target in BUILTIN_CONVERTERS.values():
                cls = _import(target)
                infos.append(PluginInfo(_qualname(cls), "converter", None))
                infos.append(PluginInfo(_qualname(cls), "header_converter", None))
        return sorted(infos, key=lambda i: (i.type, i.class_name))

    def plugin_class(self, plugin: str) -> type:
        """Any plugin by the names configs use (for ``plugin_config``)."""
        lookups: list[Callable[[str], type]] = [self.connector_class]
        from connect.converters.aliases import resolve_converter
        from connect.transforms.aliases import resolve_predicate, resolve_transform
        lookups += [resolve_transform, resolve_predicate, resolve_converter]
        for lookup in lookups:
            try:
                return lookup(plugin)
            except ConfigError:
                continue
        raise NotFoundError(f"Unknown plugin {plugin}.")


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _version(cls: type) -> str | None:
    try:
        return str(cls().version())
    except Exception:  # a plugin whose constructor fails still gets listed
        return None
