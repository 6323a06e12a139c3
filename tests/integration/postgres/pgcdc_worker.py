"""``ferry connect standalone`` running the Postgres CDC source, for the end-to-end tests:
start, SIGKILL, stop, and read the topics and stored offsets back from its embedded log
(or, given ``log``, the worker runs on that log instead, e.g. a ``kafka://`` broker)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from broker_process import free_port

from core.backends import OffsetSpec, TopicPartition, open_backend

REPO = Path(__file__).resolve().parents[3]
DEADLINE_S = 40.0


class CdcWorker:
    def __init__(self, tmp: Path, connectors: list[dict[str, Any]],
                 worker_props: str = "", log: str | None = None) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.log = log or f"embedded:{self.data}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        (tmp / "worker.properties").write_text(
            "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "offset.flush.interval.ms=200\noffset.storage.partitions=1\n" + worker_props)
        self.files = []
        for i, c in enumerate(connectors):
            path = tmp / f"connector{i}.json"
            path.write_text(json.dumps(c))
            self.files.append(str(path))

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
        log = open(self.tmp / "worker.log", "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "connect", "standalone",
             "--log", self.log, "--rest", f"127.0.0.1:{self.port}",
             str(self.tmp / "worker.properties"), *self.files],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp)
        log.close()
        self.wait(self.healthy, "GET /health to answer 200")

    def healthy(self) -> bool:
        try:
            return requests.get(self.base + "/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def get(self, path: str) -> Any:
        try:
            response = requests.get(self.base + path, timeout=5)
        except requests.RequestException:
            return None
        return response.json() if response.status_code == 200 else None

    def offset(self, name: str) -> dict[str, Any] | None:
        found = self.get(f"/connectors/{name}/offsets")
        offsets = (found or {}).get("offsets") or []
        return offsets[0]["offset"] if offsets else None

    def wait(self, cond: Any, what: str, timeout: float = DEADLINE_S) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                pytest.fail(f"worker exited ({self.proc.returncode}) waiting for {what}:\n"
                            f"{self.output()}")
            result = cond()
            if result:
                return result
            time.sleep(0.05)
        pytest.fail(f"timed out waiting for {what}:\n{self.output()}")

    def output(self) -> str:
        return (self.tmp / "worker.log").read_text(errors="replace")[-6000:]

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(DEADLINE_S)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(DEADLINE_S)
        return self.proc.returncode


def read_topic(data: Path, topic: str) -> list[tuple[Any, Any]]:
    """Every record of partition 0 as (key, value) JSON (None for null)."""
    with open_backend(f"embedded:{data}") as log:
        tp = TopicPartition(topic, 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST).get(tp, 0)
        out: list[tuple[Any, Any]] = []
        while len(out) < end:
            records = log.fetch({tp: len(out)}, max_wait_ms=100)[tp].records
            if not records:
                break
            out += [(None if r.key is None else json.loads(r.key),
                     None if r.value is None else json.loads(r.value)) for r in records]
    return out


def stored_offset(data: Path, connector: str, partition: dict[str, Any]
                  ) -> dict[str, Any] | None:
    key = json.dumps([connector, partition], separators=(",", ":")).encode()
    found = None
    with open_backend(f"embedded:{data}") as log:
        tp = TopicPartition("connect-offsets", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        at = 0
        while at < end:
            records = log.fetch({tp: at}, max_wait_ms=100)[tp].records
            for r in records:
                if r.key == key:
                    found = None if r.value is None else json.loads(r.value)
            at = records[-1].offset + 1 if records else end
    return found
