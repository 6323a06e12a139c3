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
import re
from typing import Any

from connect.api.config_provider import ConfigProvider
from connect.api.connector import Connector
from connect.api.errors import ConfigError, NotFoundError
from connect.api.sink import SinkConnector
from connect.api.source import SourceConnector
from connect.api.storage import Converter, HeaderConverter
from connect.converters.aliases import BUILTIN_CONVERTERS, KAFKA_CLASS_NAMES
from connect.runtime.herder import PluginInfo
from connect.transforms.aliases import (
    KAFKA_PREDICATES_PACKAGE,
    KAFKA_TRANSFORMS_PACKAGE,
    PREDICATES,
    TRANSFORMATIONS,
)

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


#: ``package.module`` and ``Class.Nested``: what may reach ``importlib`` (no relative or
#: empty names, no spaces or control characters).
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _import(target: str) -> Any:
    module, sep, attr = target.partition(":")
    if not sep:
        module, _, attr = target.rpartition(".")
    if not _DOTTED.fullmatch(module) or not _DOTTED.fullmatch(attr):
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
        transformations, predicates, converters and header converters. ``class`` is the
        name a config uses (``connector.class``, ``transforms.X.type``, ...): a connector's
        entry-point name, a built-in SMT's Kafka simple name (``InsertField$Value``), a
        converter's entry-point name."""
        return sorted((info for info, _ in self._catalog(connectors_only)),
                      key=lambda i: (i.type, i.class_name))

    def _catalog(self, connectors_only: bool) -> list[tuple[PluginInfo, type]]:
        out: list[tuple[PluginInfo, type]] = []
        seen: set[int] = set()
        for name, cls in sorted(self._connector_classes().items()):
            if id(cls) not in seen:  # one class under several entry points: listed once
                seen.add(id(cls))
                out.append((PluginInfo(name, connector_type(cls), _version(cls)), cls))
        if connectors_only:
            return out
        for name, cls in TRANSFORMATIONS.items():
            out.append((PluginInfo(name, "transformation", None), cls))
        for name, cls in PREDICATES.items():
            out.append((PluginInfo(name, "predicate", None), cls))
        for name, target in BUILTIN_CONVERTERS.items():
            cls = _import(target)
            kinds = ["header_converter"] if name == "SimpleHeaderConverter" else []
            if issubclass(cls, Converter):
                kinds.insert(0, "converter")
            if issubclass(cls, HeaderConverter) and "header_converter" not in kinds:
                kinds.append("header_converter")
            out += [(PluginInfo(name, kind, None), cls) for kind in kinds]
        return out

    def plugin_class(self, plugin: str) -> type:
        """A listed plugin by any name configs accept for it (``GET
        /connector-plugins/{plugin}/config``). Only installed plugins are looked up: a
        request never makes the worker import a module; anything else is ``NotFoundError``."""
        text = plugin.strip()
        for info, cls in self._catalog(connectors_only=False):
            if text in _aliases(info, cls):
                return cls
        raise NotFoundError(f"Unknown plugin {plugin}.")


def _aliases(info: PluginInfo, cls: type) -> set[str]:
    """The names a config may give for a listed plugin (as the resolvers accept them)."""
    names = {info.class_name, cls.__name__, _strip(info.class_name), _strip(cls.__name__),
             _qualname(cls), f"{cls.__module__}:{cls.__qualname__}"}
    if info.type == "transformation":
        names |= {KAFKA_TRANSFORMS_PACKAGE + info.class_name,
                  info.class_name.replace("$", ".")}
    elif info.type == "predicate":
        names.add(KAFKA_PREDICATES_PACKAGE + info.class_name)
    elif info.type in ("converter", "header_converter"):
        names |= {k for k, v in KAFKA_CLASS_NAMES.items() if v == info.class_name}
    elif info.type in ("source", "sink"):
        names |= {f"{package}.{cls.__name__}" for package in _KAFKA_CONNECTOR_PACKAGES}
    return names


#: Packages of Kafka's own connectors, whose class names configs copied from Java use.
_KAFKA_CONNECTOR_PACKAGES = ("org.apache.kafka.connect.file",)


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _version(cls: type) -> str | None:
    try:
        return str(cls().version())
    except Exception:  # a plugin whose constructor fails still gets listed
        return None
