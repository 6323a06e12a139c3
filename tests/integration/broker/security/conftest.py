"""Brokers with secured listeners, and the certificates their tests use.

``secure_broker(config)`` starts a ``ferry broker`` whose first listener is PLAINTEXT (the
``--listen`` port the fixture waits on) and whose other listeners are named in ``config``
with ports from ``free_port()``; ``tls`` is a ``TestCertificates`` set made by the tests
with the ``cryptography`` package (a CA, a server certificate for 127.0.0.1, client
certificates, an expired one and one from an unknown CA).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from broker_process import BrokerProcess, free_port
from certificates import TestCertificates, make_certificates

__all__ = ["secure_broker", "tls"]


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[Callable[..., tuple[BrokerProcess, dict]]]:
    started: list[BrokerProcess] = []

    def make(listeners: Mapping[str, str], config: Mapping[str, str] | None = None,
             name: str = "broker", extra_args: list[str] | None = None
             ) -> tuple[BrokerProcess, dict[str, int]]:
        """``listeners``: name -> protocol; returns the broker and name -> port."""
        ports = {n: free_port() for n in listeners}
        settings = {
            "listeners": ",".join(["PLAINTEXT://127.0.0.1:0"] + [
                f"{n}://127.0.0.1:{p}" for n, p in ports.items()]),
            "listener.security.protocol.map": ",".join(
                ["PLAINTEXT:PLAINTEXT"] + [f"{n}:{p}" for n, p in listeners.items()]),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "2",
            **(config or {}),
        }
        b = BrokerProcess(tmp_path / f"{name}-data", settings, tmp_path / f"{name}.log",
                          extra_args=extra_args)
        started.append(b)
        b.start()
        return b, ports

    try:
        yield make
    finally:
        for b in started:
            b.stop()


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))
