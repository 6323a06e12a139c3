"""``ferry container SERVICE``: the entry point of Ferry's container image.

Each Ferry service in ``docker/compose.yaml`` is configured through environment variables
with one convention, the one Confluent's images use (``dub``'s ``env_to_props``) with
Ferry's prefixes:

==================  ===================================  ====================================
service             prefix                               becomes
==================  ===================================  ====================================
``broker``          ``FERRY_BROKER_``                    ``ferry broker --config FILE``
``connect``         ``FERRY_CONNECT_``                   ``ferry connect distributed --config``
``registry``        ``FERRY_REGISTRY_``                  ``ferry registry --config FILE``
==================  ===================================  ====================================

The name after the prefix is lower-cased, then ``_`` becomes ``.``, ``__`` becomes ``_`` and
``___`` becomes ``-``: ``FERRY_BROKER_NODE_ID`` is ``node.id``,
``FERRY_CONNECT_OFFSET_FLUSH_INTERVAL_MS`` is ``offset.flush.interval.ms``,
``FERRY_REGISTRY_SCHEMA__REGISTRY___GROUP_ID`` would be ``schema_registry-group.id``.
The properties go to a file (``$FERRY_CONFIG_DIR``, default the temporary directory) and
the service's own command is exec'd with ``--config FILE`` and any further arguments, so
the process is exactly what ``ferry SERVICE --config FILE`` runs outside a container.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from core.cli.errors import CliError

__all__ = ["SERVICES", "container_command", "env_to_properties", "properties_to_env",
           "register"]

#: service -> (environment prefix, the ``ferry`` command it runs)
SERVICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "broker": ("FERRY_BROKER_", ("broker",)),
    "connect": ("FERRY_CONNECT_", ("connect", "distributed")),
    "registry": ("FERRY_REGISTRY_", ("registry",)),
}

_UNDERSCORES = re.compile(r"_+")
_RUNS = {1: ".", 2: "_", 3: "-"}


def env_to_properties(environ: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The properties named by the variables of ``environ`` that start with ``prefix``,
    sorted by name: the rest of the name lower-cased, ``_`` → ``.``, ``__`` → ``_``,
    ``___`` → ``-``. ValueError names a variable whose name maps to no property (nothing
    after the prefix, a run of four or more underscores, or one at either end)."""
    props: dict[str, str] = {}
    for name in sorted(environ):
        if not name.startswith(prefix):
            continue
        raw = name[len(prefix):].lower()
        if not raw or raw.startswith("_") or raw.endswith("_"):
            raise ValueError(f"environment variable {name}: no property name after {prefix}"
                             if not raw else
                             f"environment variable {name}: a property name cannot start or "
                             "end with '_'")

        def one(run: re.Match[str], name: str = name) -> str:
            if len(run.group()) not in _RUNS:
                raise ValueError(f"environment variable {name}: {len(run.group())} "
                                 "underscores in a row map to nothing (use _ for '.', __ for "
                                 "'_', ___ for '-')")
            return _RUNS[len(run.group())]

        props[_UNDERSCORES.sub(one, raw)] = environ[name]
    return props


def properties_to_env(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The variables ``env_to_properties`` turns back into ``props`` (``.`` → ``_``,
    ``_`` → ``__``, ``-`` → ``___``, upper-cased). ValueError names a key the convention
    cannot spell (upper-case letters, other punctuation, two separators in a row)."""
    env: dict[str, str] = {}
    for key, value in props.items():
        name = prefix + key.replace("_", "__").replace(".", "_").replace("-", "___").upper()
        if not _spellable(key) or env_to_properties({name: value}, prefix) != {key: value}:
            raise ValueError(f"property {key!r} has no {prefix}* variable name: only "
                             "lower-case letters, digits and single '.', '_' or '-' "
                             "between them map")
        env[name] = value
    return env


def _spellable(key: str) -> bool:
    return re.fullmatch(r"[a-z0-9]+(?:[._-][a-z0-9]+)*", key) is not None


def container_command(service: str, args: Sequence[str], environ: Mapping[str, str],
                      config_dir: Path) -> tuple[list[str], dict[str, str], Path]:
    """``(argv, properties, config file)`` of ``service`` under ``environ``: the
    ``ferry`` command line the entry point execs and the properties it writes first."""
    if service not in SERVICES:
        raise CliError(f"unknown service {service!r}: one of {', '.join(SERVICES)}")
    prefix, command = SERVICES[service]
    try:
        props = env_to_properties(environ, prefix)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    path = config_dir / f"{service}.properties"
    return ["ferry", *command, "--config", str(path), *args], props, path


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    """Java ``.properties`` text (``=``, ``:`` and backslashes in values escaped)."""
    lines = []
    for key, value in props.items():
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
        lines.append(f"{key}={escaped}\n")
    path.write_text("".join(lines))


def register(subparsers: argparse._SubParsersAction) -> None:
    # No --log options of its own: every argument after SERVICE is the service's.
    parser = subparsers.add_parser(
        "container", allow_abbrev=False,
        help="the container image's entry point: settings from FERRY_<SERVICE>_* variables",
        description="write the FERRY_BROKER_*, FERRY_CONNECT_* or FERRY_REGISTRY_* "
                    "environment variables as the service's properties file (see "
                    "docker/README.md for the mapping), then run the service with it")
    parser.add_argument("service", choices=sorted(SERVICES))
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="more arguments for the service's command")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    config_dir = Path(os.environ.get("FERRY_CONFIG_DIR") or tempfile.gettempdir())
    argv, props, path = container_command(args.service, args.rest, os.environ, config_dir)
    try:
        config_dir.mkdir(parents=True, exist_ok=True)
        write_properties(path, props)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    from core.cli.main import main

    # In-process rather than exec: the same interpreter, the service's signals still
    # reach it (PID 1 with compose's init: true).
    return main(argv[1:])
