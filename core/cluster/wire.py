"""The controller listener's frames: a 4-byte big-endian length, then a JSON object.

Raft messages go one way between voters (``{"kind": "raft", ...}``); requests to the
controller (``{"kind": "request", "id", "op", "args"}``) get one ``reply`` on the same
connection. This is Ferry's internal protocol, spoken only on ``controller.listener.names``
listeners; clients never see it. JSON keeps the frames readable in a packet capture, and the
metadata traffic is small.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from dataclasses import asdict
from typing import Any

from core.cluster.raft import (
    AppendRequest,
    AppendResponse,
    Entry,
    Message,
    VoteRequest,
    VoteResponse,
)

__all__ = ["MAX_FRAME", "WireError", "message_from_json", "message_to_json", "read_frame",
           "write_frame"]

MAX_FRAME = 64 * 1024 * 1024
_LENGTH = struct.Struct(">I")
_MESSAGES = {cls.__name__: cls for cls in (AppendRequest, AppendResponse, VoteRequest,
                                           VoteResponse)}


class WireError(Exception):
    """A frame that is not one of ours: the connection is closed."""


def message_to_json(message: Message) -> dict[str, Any]:
    body = asdict(message)
    if isinstance(message, AppendRequest):
        body["entries"] = [[e.term, base64.b64encode(e.data).decode()] for e in message.entries]
    return {"type": type(message).__name__, **body}


def message_from_json(obj: dict[str, Any]) -> Message:
    try:
        body = dict(obj)
        cls = _MESSAGES[body.pop("type")]
        if cls is AppendRequest:
            body["entries"] = tuple(Entry(int(t), base64.b64decode(d))
                                    for t, d in body["entries"])
        return cls(**body)
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"not a Raft message: {exc}") from None


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The next frame; IncompleteReadError at the end of the stream."""
    (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    if length > MAX_FRAME:
        raise WireError(f"frame of {length} bytes is larger than {MAX_FRAME}")
    try:
        obj = json.loads(await reader.readexactly(length))
    except ValueError as exc:
        raise WireError(f"frame is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise WireError("frame is not a JSON object")
    return obj


def write_frame(writer: asyncio.StreamWriter, obj: dict[str, Any]) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    writer.write(_LENGTH.pack(len(data)) + data)
