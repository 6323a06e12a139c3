"""Which connector config values are secrets, and how the REST API shows them.

Kafka Connect returns a connector's config exactly as stored from ``GET
/connectors/{name}``, ``/config``, ``?expand=info`` and ``/tasks``, passwords included
(KAFKA-5117 answered with config providers, not masking); only ``PUT
/connector-plugins/{plugin}/config/validate`` hides ``PASSWORD``-typed values, as
``[hidden]``. Ferry goes further: every endpoint shows a secret as that same ``[hidden]``.
The stored config (standalone file, distributed config topic) keeps the value, so tasks
on every worker get it; only what leaves through the API is masked.

A key is a secret when the connector's full definition (framework keys, transforms,
predicates and the connector's own ``config()``) types it ``PASSWORD``, or when its name
says so: ``password`` or ``*.password`` (``database.password``, ``ssl.key.password``),
``*jaas.config`` (``sasl.jaas.config``, ``producer.override.sasl.jaas.config``),
``*basic.auth.user.info`` (a registry's ``user:password``) and
``*secret.access.key``. A value that is only a config provider reference
(``${file:/etc/secrets.properties:db.password}``) is not a secret and is shown as written.

Round trip: ``GET .../config`` then ``PUT`` of the same body must not store
``[hidden]`` as the password, so ``restore_masked`` puts back the stored value of every
secret key the new config still gives as ``[hidden]``.

Failure traces (a task's or connector's status ``trace`` and the logged trace) often
quote what a client library was given, a connection URL with its password for one:
``scrub`` replaces every secret value of the config (resolved from config providers, as
the plugin saw it) with ``[hidden]`` before a trace is stored, shown or logged. Values
shorter than ``MIN_SCRUBBED`` characters are left alone (replacing every "a" would
garble the trace and hide nothing).

Pure functions over plugins and dicts; safe from any thread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from connect.api.config import ConfigType, Password
from connect.api.errors import ConfigError
from connect.runtime.config_providers import has_placeholder
from connect.runtime.connector_config import connector_config_def
from connect.runtime.plugins import Plugins, connector_type

__all__ = ["MASK", "is_secret_name", "mask_config", "mask_task_config", "restore_masked",
           "scrub", "secret_keys", "secret_values"]

#: What a secret value is shown as (Kafka's ``Password.HIDDEN``).
MASK = Password.HIDDEN

_SECRET_NAME = re.compile(
    r"(?:^|\.)password$|jaas\.config$|basic\.auth\.user\.info$|secret\.access\.key$",
    re.IGNORECASE)


def is_secret_name(key: str) -> bool:
    """True when the key's name alone marks a secret (see the module docstring)."""
    return bool(_SECRET_NAME.search(key))


def secret_keys(plugins: Plugins, config: Mapping[str, str]) -> frozenset[str]:
    """The keys of ``config`` whose values are secrets, and any ``PASSWORD``-typed key the
    connector declares (given or not)."""
    keys = {k for k in config if is_secret_name(k)}
    connector_class = config.get("connector.class")
    own, sink = None, False
    if connector_class:
        try:
            cls = plugins.connector_class(connector_class)
            own, sink = cls().config(), connector_type(cls) == "sink"
        except Exception:  # an unknown or broken plugin: fall back to the names alone
            own = None
    try:
        definition = connector_config_def(config, own, sink)
    except (ConfigError, ValueError):  # a malformed transforms chain: names alone
        return frozenset(keys)
    keys.update(name for name, key in definition.config_keys.items()
                if key.type is ConfigType.PASSWORD)
    return frozenset(keys)


MIN_SCRUBBED = 4


def secret_values(plugins: Plugins, config: Mapping[str, str]) -> tuple[str, ...]:
    """The secret values of ``config`` (pass the resolved config), longest first."""
    values = {config[k] for k in secret_keys(plugins, config)
              if len(config.get(k) or "") >= MIN_SCRUBBED and not has_placeholder(config[k])}
    return tuple(sorted(values, key=len, reverse=True))


def scrub(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` replaced by ``[hidden]``."""
    for value in values:
        if len(value) >= MIN_SCRUBBED:
            text = text.replace(value, MASK)
    return text


def _shown(value: str | None) -> str | None:
    """A secret's value as the API shows it: placeholders as written, the rest hidden."""
    if value is None or value == "" or has_placeholder(value):
        return value
    return MASK


def mask_config(config: Mapping[str, str], secrets: Iterable[str]) -> dict[str, str]:
    """``config`` with the value of every key in ``secrets`` shown as ``[hidden]``."""
    hidden = set(secrets)
    return {k: (_shown(v) if k in hidden else v) for k, v in config.items()}  # type: ignore[misc]


def mask_task_config(task_config: Mapping[str, str], connector_config: Mapping[str, str],
                     secrets: Iterable[str]) -> dict[str, str]:
    """A task's config for display: its secret keys masked, and any value equal to one
    of the connector's secret values too (a connector may hand a password to its tasks
    under another key)."""
    hidden = set(secrets)
    secret_values = {connector_config[k] for k in hidden
                     if connector_config.get(k) and _shown(connector_config[k]) == MASK}
    return {k: (_shown(v) if k in hidden or is_secret_name(k) or v in secret_values else v)
            for k, v in task_config.items()}  # type: ignore[misc]


def restore_masked(plugins: Plugins, config: Mapping[str, str],
                   stored: Mapping[str, str] | None) -> dict[str, str]:
    """``config`` with each secret given as ``[hidden]`` replaced by its ``stored`` value
    (what a client that read the masked config and sent it back means)."""
    out = dict(config)
    if not stored:
        return out
    for key in secret_keys(plugins, out):
        if out.get(key) == MASK and key in stored:
            out[key] = stored[key]
    return out
