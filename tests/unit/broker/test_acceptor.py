"""The Acceptor: refused connections never reach a protocol, and accept() failing for lack
of descriptors costs one log line and a pause, not a line per waiting connection."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket

import pytest

import core.broker.acceptor as acceptor_module
from core.broker.acceptor import Acceptor
from core.broker.connection_quotas import ConnectionQuotas
from core.broker.log_limit import RateLimitedLog


class OutOfDescriptors(socket.socket):
    """A listening socket whose accept() fails as it does at the open-file limit (the only
    stand-in here: a real EMFILE would starve the test process too)."""

    def accept(self):  # type: ignore[override]
        raise OSError(errno.EMFILE, "Too many open files")


def test_running_out_of_descriptors_logs_once_and_pauses(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acceptor_module, "_RETRY_AFTER_S", 0.05)
    logger = logging.getLogger("test.acceptor")
    acceptor = Acceptor("127.0.0.1", 0, quotas=ConnectionQuotas(10, 10),
                        warnings=RateLimitedLog(logger, burst=1, interval_s=60),
                        protocol_factory=lambda address: asyncio.Protocol())

    async def scenario() -> None:
        acceptor._loop = asyncio.get_running_loop()
        failing = OutOfDescriptors()
        acceptor._sockets = [failing]
        failing.listen()
        for _ in range(1000):  # as many wake-ups as connections waiting
            acceptor._accept(failing)
        assert acceptor._paused == {failing.fileno()}
        await asyncio.sleep(0.2)
        assert acceptor._paused == set()  # accepting again after the pause
        acceptor.close()

    with caplog.at_level(logging.ERROR, logger="test.acceptor"):
        asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records] == [
        "cannot accept connections: [Errno 24] Too many open files; retrying in 0 s"]


def test_a_refused_connection_is_closed_before_any_protocol_exists() -> None:
    made: list[str] = []

    class Recorder(asyncio.Protocol):
        def __init__(self, address: str) -> None:
            made.append(address)

    quotas = ConnectionQuotas(max_connections=10, max_per_ip=1)

    async def scenario() -> bytes:
        acceptor = Acceptor("127.0.0.1", 0, quotas=quotas,
                            warnings=RateLimitedLog(logging.getLogger("test.acceptor")),
                            protocol_factory=Recorder)
        acceptor.start()
        loop = asyncio.get_running_loop()
        first = socket.create_connection(("127.0.0.1", acceptor.port))
        second = socket.create_connection(("127.0.0.1", acceptor.port))
        for sock in (first, second):
            sock.setblocking(False)
        await asyncio.sleep(0.2)
        try:
            refused = await asyncio.wait_for(loop.sock_recv(second, 1), 5)
        except ConnectionResetError:
            refused = b""
        acceptor.close()
        await acceptor.wait_closed()
        first.close()
        second.close()
        return refused

    refused = asyncio.run(scenario())
    assert refused == b"" and made == ["127.0.0.1"] and quotas.total == 1
