"""The dependency direction of shared/design.md, checked on the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package -> repository packages it may import (besides itself)
ALLOWED = {
    "core.log": set(),
    "core.protocol": set(),
    "core.http": {"core.telemetry"},
    "core.telemetry": set(),
    "core.group": {"core.log", "core.protocol"},
    "core.cluster": set(),  # the Raft quorum and metadata: sans-IO, imports nothing
    # core.cluster: its listener parsing, and a cluster broker's replicas apply the
    # metadata image (issue 16); it imports nothing, so no cycle
    "core.broker": {"core.log", "core.group", "core.protocol", "core.http",
                    "core.telemetry", "core.cluster"},
    "core.backends": {"core.log", "core.group", "core.protocol"},
    "core.cli": {"core.backends", "core.broker", "core.cluster", "core.log", "core.http",
                 "core.telemetry"},
    "connect.api": set(),
    "connect.converters": {"connect.api"},
    "connect.transforms": {"connect.api"},
    # core.http: a worker's requests to the leader (forwarded REST calls, task configs)
    "connect.runtime": {"connect.api", "connect.converters", "connect.transforms",
                        "core.backends", "core.http", "core.telemetry"},
    "connectors": {"connect.api"},
    # The PySpark data source is no Connect plugin: it reads and writes topics through the
    # LogBackend (as design.md draws it) and decodes Confluent wire-format values with the
    # registry's client and wire codec.
    "connectors.spark": {"core.backends", "schema_registry.serde"},
    # `ferry connect`: CLI wiring, which the design lets see every layer it wires.
    "connect.cli": {"connect.api", "connect.rest", "connect.runtime", "core.backends",
                    "core.broker", "core.cli"},
    "connect.rest": {"connect.api", "connect.runtime", "core.http"},
    "schema_registry": {"core.backends", "core.http"},
    "schema_registry.serde": {"connect.api", "schema_registry"},  # only .schemas: see its test
    # `ferry registry`: CLI wiring (core.broker only for its config-file reader).
    "schema_registry.cli": {"schema_registry", "core.backends", "core.broker", "core.cli"},
}
REPO_PACKAGES = ("core", "connect", "connectors", "schema_registry")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _owner(module: str) -> str | None:
    for package in sorted(ALLOWED, key=len, reverse=True):
        if module == package or module.startswith(package + "."):
            return package
    if module.split(".")[0] in REPO_PACKAGES:
        return module
    return None


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_the_design_allows(package):
    directory = ROOT.joinpath(*package.split("."))
    module = directory.with_suffix(".py")
    if directory.is_dir():
        paths = sorted(directory.rglob("*.py"))
    elif module.is_file():
        paths = [module]
    else:
        pytest.skip(f"{package} does not exist yet")
    offenders = []
    for path in paths:
        if _owner(".".join(path.relative_to(ROOT).with_suffix("").parts)) != package:
            continue  # a more specific entry (schema_registry.cli) checks this file
        for module in _imports(path):
            owner = _owner(module)
            if owner is None or owner == package:
                continue
            if owner not in ALLOWED[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_nothing_outside_core_imports_core_log_directly():
    offenders = []
    for top in ("connect", "connectors", "schema_registry"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for module in _imports(path):
                if module == "core.log" or module.startswith(("core.log.", "core.group")):
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []
