"""The README's examples, run in the order written against a fresh ``ferry up``.

This is the first hour of a new user: every ``sh`` and ``python`` block of README.md is
extracted and run in order (a block preceded by ``<!-- readme-test: skip -->`` is not:
installing Ferry, starting ``ferry up`` and running the test suite). The ports and ``/tmp``
paths the README names are replaced by free ports and a temporary directory; nothing else
is changed, so a README example that stops working fails here. Each block runs in its own
session, which is killed afterwards, so servers a block leaves in the background stop.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import free_port

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
BLOCK_TIMEOUT_S = 180.0
#: The addresses the README uses; each is replaced by a free port on 127.0.0.1.
README_PORTS = (9092, 8083, 8081, 8084, 9093, 8091, 8092)

_BLOCK = re.compile(r"(?P<marker><!-- readme-test: skip[^>]*-->\n)?```(?P<lang>sh|python)\n"
                    r"(?P<code>.*?)^```", re.DOTALL | re.MULTILINE)

#: What a block prints when it works, by a fragment that identifies the block. Every
#: block must also exit 0 and print no traceback.
EXPECTED_OUTPUT = {
    "kcat -b": ['carol {"total": 3} (partition 0, offset 0)'],
    'key=b"dave"': ["b'carol' b'{\"total\": 3}'"],
    "subjects/payments-value/versions/latest": ['"subject":"payments-value"', '"version":1'],
    "AvroSerializer": ["{'id': 'p-1', 'amount': 9.5}"],
    "orders-file": ['"state":"RUNNING"', '{"total": 3}\n{"total": 12}\nfirst\nsecond\n'],
    "connect standalone": ['"version"'],
    "connect distributed": ['"name":"users"', '"id":0,"state":"RUNNING"',
                            '"id":1,"state":"RUNNING"'],
    "topics create invoices": ["Created topic invoices.", "alice", "bob", "billing",
                               "Deleted topic invoices."],
}


def readme_blocks() -> list[tuple[str, str]]:
    """``(language, code)`` of every block the test runs, in README order."""
    text = README.read_text(encoding="utf-8")
    return [(m["lang"], m["code"]) for m in _BLOCK.finditer(text) if not m["marker"]]


def _substitute(code: str, ports: dict[int, int], tmp: Path) -> str:
    for readme_port, port in ports.items():
        code = code.replace(f"127.0.0.1:{readme_port}", f"127.0.0.1:{port}")
    return code.replace("/tmp/", f"{tmp}/")


def _stop_session(proc: subprocess.Popen[bytes]) -> None:
    """Stop whatever the block left running in its session (background servers)."""
    for sig, wait_s in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a ``ferry`` that runs this checkout; no FERRY_* from the caller."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "ferry"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m core.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FERRY_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture
def stack(tmp_path: Path, shell_env: dict[str, str]) -> Iterator[dict[int, int]]:
    """A fresh ``ferry up`` in ``tmp_path/work`` on free ports, ready; stopped after."""
    work = tmp_path / "work"
    work.mkdir()
    ports = {readme_port: free_port() for readme_port in README_PORTS}
    log_path = tmp_path / "ferry-up.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "up", "--listen", f"127.0.0.1:{ports[9092]}",
             "--connect-rest", f"127.0.0.1:{ports[8083]}",
             "--registry-listen", f"127.0.0.1:{ports[8081]}"],
            cwd=work, env=shell_env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while b"ferry up ready:" not in log_path.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ferry up did not get ready:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.1)
        yield ports
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    output = log_path.read_text(errors="replace")
    assert "Traceback" not in output, output[-4000:]


def test_readme_blocks_are_found() -> None:
    langs = [lang for lang, _code in readme_blocks()]
    assert langs.count("python") >= 3 and langs.count("sh") >= 5, langs
    codes = "\n".join(code for _lang, code in readme_blocks())
    for fragment in EXPECTED_OUTPUT:
        assert fragment in codes, f"no README block contains {fragment!r}"


@pytest.mark.skipif(shutil.which("kcat") is None or shutil.which("curl") is None,
                    reason="the README's examples use kcat and curl (tests/run installs kcat)")
def test_readme_examples_work_in_order_on_a_fresh_stack(
        stack: dict[int, int], tmp_path: Path, shell_env: dict[str, str]) -> None:
    work = tmp_path / "work"
    for number, (lang, code) in enumerate(readme_blocks(), 1):
        script = _substitute(code, stack, tmp_path)
        command = (["bash", "-e", "-o", "pipefail", "-c", script] if lang == "sh"
                   else [sys.executable, "-c", script])
        proc = subprocess.Popen(command, cwd=work, env=shell_env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop_session(proc)
            out, err = proc.communicate()
            pytest.fail(f"README block {number} ({lang}) did not finish:\n{code}\n"
                        f"stdout:\n{out.decode(errors='replace')[-3000:]}\n"
                        f"stderr:\n{err.decode(errors='replace')[-3000:]}")
        finally:
            _stop_session(proc)
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        where = (f"README block {number} ({lang}):\n{code}\nstdout:\n{stdout[-3000:]}\n"
                 f"stderr:\n{stderr[-3000:]}")
        assert proc.returncode == 0, where
        assert "Traceback" not in stderr, where
        for fragment, expected in EXPECTED_OUTPUT.items():
            if fragment in code:
                for text in expected:
                    assert text in stdout, f"{text!r} missing; {where}"
