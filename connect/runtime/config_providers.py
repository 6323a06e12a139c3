"""Config providers (KIP-297): the built-in ``file`` and ``env`` providers, and the
transformer that resolves ``${provider:path:key}`` placeholders when a connector or task
starts. Resolved values never reach the herder's stored config, REST answers or logs:
``mask`` replaces every value that came from a placeholder."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Collection, Mapping
from typing import Any

from connect.api.config_provider import ConfigData, ConfigProvider
from connect.api.errors import ConfigError

__all__ = ["ConfigTransformer", "EnvVarConfigProvider", "FileConfigProvider",
           "load_config_providers"]

log = logging.getLogger(__name__)

#: ``${provider:path:key}`` or ``${provider:key}`` (empty path; Kafka's env form); the
#: path may be empty too (``${env::VAR}``).
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.-]+):(?:([^}]*?):)?([^}:]*)\}")


def _read_properties(path: str) -> dict[str, str]:
    """A Java ``.properties`` file's ``key=value`` / ``key: value`` pairs (no escapes
    beyond line continuations, which Kafka's secrets files rarely use)."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        pending = ""
        for raw in fh:
            line = pending + raw.strip()
            pending = ""
            if not line or line[0] in "#!":
                continue
            if line.endswith("\\"):
                pending = line[:-1]
                continue
            match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
            if match:
                out[match.group(1)] = match.group(2)
            else:
                out[line] = ""
    return out


class FileConfigProvider(ConfigProvider):
    """``${file:/path/to/secrets.properties:key}``: a key of a properties file (Kafka's
    FileConfigProvider). ``allowed.paths`` (comma-separated directories) limits reads."""

    def __init__(self) -> None:
        self._allowed: list[str] = []

    def configure(self, configs: Mapping[str, Any]) -> None:
        allowed = str(configs.get("allowed.paths", "") or "")
        self._allowed = [os.path.realpath(p.strip()) for p in allowed.split(",") if p.strip()]

    def get(self, path: str, keys: Collection[str] | None = None) -> ConfigData:
        if not path:
            return ConfigData({})
        real = os.path.realpath(path)
        if self._allowed and not any(real == a or real.startswith(a + os.sep)
                                     for a in self._allowed):
            raise ConfigError(None, f"{path} is not in allowed.paths")
        try:
            data = _read_properties(real)
        except OSError as exc:
            raise ConfigError(None, f"could not read {path}: {exc.strerror}") from exc
        if keys is not None:
            data = {k: v for k, v in data.items() if k in keys}
        return ConfigData(data)

    def close(self) -> None:
        """Nothing to release."""


class EnvVarConfigProvider(ConfigProvider):
    """``${env:VAR}`` (or ``${env::VAR}``): an environment variable (Kafka's
    EnvVarConfigProvider). ``allowlist.pattern`` restricts the names readable."""

    def __init__(self) -> None:
        self._allow: re.Pattern[str] | None = None

    def configure(self, configs: Mapping[str, Any]) -> None:
        pattern = configs.get("allowlist.pattern")
        self._allow = re.compile(str(pattern)) if pattern else None

    def get(self, path: str, keys: Collection[str] | None = None) -> ConfigData:
        if path:
            raise ConfigError(None, "the env config provider takes no path: use ${env:VAR}")
        env = {k: v for k, v in os.environ.items()
               if self._allow is None or self._allow.fullmatch(k)}
        if keys is not None:
            env = {k: v for k, v in env.items() if k in keys}
        return ConfigData(env)

    def close(self) -> None:
        """Nothing to release."""


class ConfigTransformer:
    """Resolves placeholders with the worker's providers. Thread-safe (providers are)."""

    def __init__(self, providers: Mapping[str, ConfigProvider]) -> None:
        self._providers = dict(providers)
        self._lock = threading.Lock()

    def transform(self, config: Mapping[str, str]) -> dict[str, str]:
        """``config`` with every resolvable placeholder replaced; unknown providers and
        keys stay as written, as Kafka leaves them. Raises ``ConfigError`` when a
        provider refuses a path."""
        out = {}
        for key, value in config.items():
            out[key] = _PLACEHOLDER.sub(lambda m: self._lookup(m) or m.group(0), value) \
                if isinstance(value, str) else value
        return out

    def _lookup(self, match: re.Match[str]) -> str | None:
        provider = self._providers.get(match.group(1))
        if provider is None:
            return None
        path, key = match.group(2) or "", match.group(3)
        return provider.get(path, {key}).data.get(key)

    def close(self) -> None:
        for name, provider in self._providers.items():
            try:
                provider.close()
            except Exception:  # keep closing the others
                log.warning("closing config provider %s failed", name, exc_info=True)


def has_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.search(value))


def mask(config: Mapping[str, str], raw: Mapping[str, str]) -> dict[str, str]:
    """``config`` for logging: values whose raw form held a placeholder are hidden."""
    return {k: ("[hidden]" if has_placeholder(str(raw.get(k, ""))) else v)
            for k, v in config.items()}


def load_config_providers(names: list[str], worker_props: Mapping[str, str],
                          resolve: Any) -> dict[str, ConfigProvider]:
    """Instantiate ``config.providers`` as Kafka does: ``config.providers.NAME.class``
    names the class (default: NAME itself, so ``file`` and ``env`` need no class key),
    ``config.providers.NAME.param.*`` configures it. ``resolve(class_name)`` finds it."""
    providers: dict[str, ConfigProvider] = {}
    for name in names:
        prefix = f"config.providers.{name}."
        cls = resolve(worker_props.get(prefix + "class", name))
        provider = cls()
        params = {k[len(prefix) + 6:]: v for k, v in worker_props.items()
                  if k.startswith(prefix + "param.")}
        provider.configure(params)
        providers[name] = provider
    return providers
