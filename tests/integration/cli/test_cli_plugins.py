"""Plugin commands through the ``ferry.commands`` entry points, from a real distribution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import Ferry

pytestmark = pytest.mark.integration

PLUGIN_MODULE = '''
import sys


def register(subparsers):
    parser = subparsers.add_parser("hello", help="say hello")
    parser.add_argument("name")
    parser.set_defaults(func=run)


def run(args):
    sys.stdout.write(f"hello {args.name} on {args.log_url}\\n")
    return 3


def register_broken(subparsers):
    subparsers.add_parser("half-done")
    raise RuntimeError("plugin bug")
'''

ENTRY_POINTS = """
[ferry.commands]
hello = ferry_test_plugin:register
broken = ferry_test_plugin:register_broken
missing = ferry_test_plugin_not_installed:register
"""


def install_plugin(site: Path) -> dict[str, str]:
    """A minimal installed distribution on its own path entry; returns the env to use it."""
    dist_info = site / "ferry_test_plugin-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (site / "ferry_test_plugin.py").write_text(PLUGIN_MODULE)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ferry-test-plugin\nVersion: 1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def test_plugin_commands_load_and_broken_ones_are_skipped(ferry: Ferry) -> None:
    env = install_plugin(ferry.tmp_path / "site")

    result = ferry.run("hello", "world", "--log", "embedded:somewhere", log=False, env=env)
    assert result.returncode == 3, result.stderr
    assert result.stdout == b"hello world on embedded:somewhere\n"
    stderr = result.stderr.decode()
    assert "broken" in stderr and "plugin bug" in stderr
    assert "missing" in stderr and "Traceback" not in stderr

    # A half-registered plugin leaves no command behind.
    result = ferry.run("half-done", log=False, env=env)
    assert result.returncode == 2

    # Built-in commands do not import plugins at all: no warnings.
    result = ferry.run("topics", "create", "t", env=env)
    assert result.returncode == 0 and result.stderr == b""

    help_text = ferry.run("--help", log=False, env=env).stdout
    assert b"hello" in help_text and b"topics" in help_text
