"""Logging for the ``ferry`` process: terse warnings for console tools, INFO for servers."""

from __future__ import annotations

import logging

__all__ = ["configure_console_logging", "configure_server_logging"]


def configure_console_logging() -> None:
    """Warnings and errors only, one line each, so tool output stays clean. Leaves an
    existing configuration alone (``main`` called in-process by a test or an embedder)."""
    logging.basicConfig(level=logging.WARNING, format="ferry: %(levelname)s: %(message)s")


def configure_server_logging(level: int = logging.INFO) -> None:
    """Timestamped lines on stderr for long-running commands (``ferry up``)."""
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
