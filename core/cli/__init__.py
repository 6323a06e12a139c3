"""The ``ferry`` command: console tools over one LogBackend, plus plugin commands."""

from core.cli.main import main

__all__ = ["main"]
