"""Shared pytest configuration: hypothesis profiles sized for CI's two cores, and how
``tests/run`` spreads modules over pytest-xdist workers (``tests/xdist_scheduling.py``)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["xdist_scheduling"]

settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
