"""Per-logger levels from ``--log-level`` and ``FERRY_LOG_LEVEL`` on a real ``ferry``
process, with JSON lines carrying OpenTelemetry's severity number."""

from __future__ import annotations

import json

import pytest
from cli_helpers import Ferry

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_logger_gets_its_own_level(ferry: Ferry, how: str) -> None:
    ferry.ok("topics", "create", "t")
    levels = "error,core.log=debug"
    args = ("--log-level", levels) if how == "flag" else ()
    env = {"FERRY_LOG_LEVEL": levels} if how == "env" else {}
    result = ferry.run(*args, "--log-format", "json", "topics", "list", env=env)
    assert result.returncode == 0, result.stderr
    entries = [json.loads(line) for line in result.stderr.decode().splitlines()]
    assert entries, "core.log logs at DEBUG when it opens the directory"
    assert {e["logger"].split(".")[:2] == ["core", "log"] for e in entries} == {True}
    assert any(e["level"] == "DEBUG" and e["severity_number"] == 5 for e in entries)


def test_a_bad_logger_level_is_one_error_line(ferry: Ferry) -> None:
    result = ferry.run("topics", "list", env={"FERRY_LOG_LEVEL": "info,core.log=loud"})
    stderr = result.stderr.decode()
    assert result.returncode != 0 and "Traceback" not in stderr, stderr
    assert stderr.strip().count("\n") == 0 and "FERRY_LOG_LEVEL" in stderr, stderr
