"""Put back every logger's level after a test that lets requests change them
(``PUT /admin/loggers/...`` changes the levels of the test process itself)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["restored_log_levels"]


@contextmanager
def restored_log_levels() -> Iterator[None]:
    levels = {name: logger.level for name, logger in logging.Logger.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    root_level = logging.getLogger().level
    try:
        yield
    finally:
        logging.getLogger().setLevel(root_level)
        for name, logger in list(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(name, logging.NOTSET))
