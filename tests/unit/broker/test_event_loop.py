"""The broker's event loop choice: uvloop by default, asyncio's loop on request or without it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.broker import event_loop
from core.broker.config import BrokerConfigError

uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed on this platform")


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_uvloop_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    assert event_loop.loop_factory()[0] == "uvloop"
    assert event_loop.run(_loop_type()) is uvloop.Loop


def test_asyncio_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, " AsyncIO ")
    assert event_loop.loop_factory()[0] == "asyncio"
    assert not issubclass(event_loop.run(_loop_type()), uvloop.Loop)


def test_asyncio_loop_when_uvloop_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    assert event_loop.loop_factory()[0] == "asyncio"
    assert not issubclass(event_loop.run(_loop_type()), uvloop.Loop)


def test_unknown_loop_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, "trio")
    coroutine = _loop_type()
    with pytest.raises(BrokerConfigError, match="FERRY_EVENT_LOOP='trio'") as raised:
        event_loop.run(coroutine)
    assert raised.value.key == "FERRY_EVENT_LOOP"
    assert coroutine.cr_frame is None  # closed, never left pending


def test_unknown_loop_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "core.cli", "broker", "--data-dir", str(tmp_path / "data"),
         "--listen", "127.0.0.1:0"],
        env={**os.environ, event_loop.ENV_VAR: "trio"}, capture_output=True, text=True,
        timeout=60)
    assert result.returncode != 0
    assert "FERRY_EVENT_LOOP='trio'" in result.stderr
    assert "Traceback" not in result.stderr
