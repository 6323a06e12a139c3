"""Subcommands contributed by other packages through the ``ferry.commands`` entry points."""

from __future__ import annotations

import argparse
import logging
from importlib.metadata import entry_points

from core.cli.options import add_log_option

__all__ = ["ENTRY_POINT_GROUP", "load_plugin_commands"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "ferry.commands"


def load_plugin_commands(subparsers: argparse._SubParsersAction) -> list[str]:
    """Call every ``ferry.commands`` entry point's ``register(subparsers)``.

    Each plugin adds its parser(s) and ``set_defaults(func=...)``; ``func(args)`` returns the
    exit code (``None`` means 0) and finds the effective log URL in ``args.log_url``. A plugin that
    fails to load or register is skipped with a warning so that one broken package does not
    take the built-in commands down with it. Returns the names of the plugins registered.
    """
    loaded = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        before = set(subparsers.choices)
        try:
            register = ep.load()
            register(subparsers)
        except Exception as exc:  # third-party code: anything can go wrong
            for name in set(subparsers.choices) - before:
                del subparsers.choices[name]  # drop what a half-registered plugin added
            log.warning("skipping command plugin %r (%s): %s: %s", ep.name, ep.value,
                        type(exc).__name__, exc)
            continue
        for name in set(subparsers.choices) - before:
            # Every command accepts --log after its name, plugins included.
            add_log_option(subparsers.choices[name])
        loaded.append(ep.name)
    return loaded
