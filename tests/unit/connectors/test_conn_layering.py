"""Connectors and the example plugin import the Connect plugin API, never the runtime."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "connectors" / name for name in ("file", "datagen", "s3", "jdbc")]
SOURCES.append(ROOT / "plugins" / "ferry-example-plugin" / "ferry_example_plugin")
REPO_PACKAGES = ("core", "connect", "connectors", "schema_registry")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("directory", SOURCES, ids=lambda d: d.name)
def test_imports_only_connect_api(directory: Path) -> None:
    own = f"connectors.{directory.name}"
    files = sorted(directory.rglob("*.py"))
    assert files, f"{directory} has no sources"
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in files
        for module in _imports(path)
        if module.split(".")[0] in REPO_PACKAGES
        and not (module == "connect.api" or module.startswith("connect.api."))
        and not (module == own or module.startswith(own + "."))
    ]
    assert offenders == []
