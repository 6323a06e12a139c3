"""The controller listener's frames: Raft messages round-trip, and a malformed frame closes
its own connection only while the service keeps answering others (a real ClusterService,
one voter, on a free port)."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest
from broker_process import free_port

from core.cluster.config import ClusterConfig
from core.cluster.raft import AppendRequest, AppendResponse, Entry, VoteRequest, VoteResponse
from core.cluster.service import ClusterService, request
from core.cluster.wire import WireError, message_from_json, message_to_json


@pytest.mark.parametrize("message", [
    AppendRequest(1, 3, 4, 2, (Entry(2, b"\x00\xff"), Entry(3, b"")), 4),
    AppendResponse(2, 3, False, 1), VoteRequest(3, 5, 10, 4), VoteResponse(1, 5, True)])
def test_raft_messages_round_trip(message):
    assert message_from_json(message_to_json(message)) == message


@pytest.mark.parametrize("obj", [{}, {"type": "Nope"}, {"type": "VoteResponse", "src": 1}])
def test_a_bad_message_is_a_wire_error(obj):
    with pytest.raises(WireError):
        message_from_json(obj)


def test_a_malformed_frame_closes_only_its_connection(tmp_path: Path):
    port = free_port()
    config = ClusterConfig.parse({
        "process.roles": "controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{port}",
        "listeners": f"CONTROLLER://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "log.dirs": str(tmp_path)})

    async def scenario() -> None:
        service = ClusterService(config, seed=1)
        await service.start()
        try:
            for garbage in (struct.pack(">I", 3) + b"{{{", struct.pack(">I", 2**31),
                            struct.pack(">I", 2) + b"[]",
                            struct.pack(">I", 15) + b'{"kind":"what"}'):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(garbage)
                await writer.drain()
                assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the node
                writer.close()
            for _ in range(100):  # a single voter elects itself after its election timeout
                reply = await request("127.0.0.1", port, "describe", {})
                assert reply["error_code"] == 0
                if reply["result"]["controller_id"] == 1:
                    break
                await asyncio.sleep(0.05)
            assert reply["result"]["controller_id"] == 1
            reply = await request("127.0.0.1", port, "create_topic",
                                  {"name": "t", "partitions": "x"})
            assert reply["error_code"] == 42 and "bad create_topic" in reply["error_message"]
        finally:
            await service.stop()

    asyncio.run(scenario())
