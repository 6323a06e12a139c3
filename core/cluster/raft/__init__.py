"""The Raft consensus log behind the metadata quorum, sans-IO.

``RaftNode`` is the protocol state machine only: it is given messages and the time and
returns the messages to send, so the same code runs over TCP between controllers and in the
deterministic simulation tests (one process, simulated clock and network). ``storage`` holds
the durable part (term, vote, log), fsynced before any message that depends on it leaves.

Why hand-written rather than a library: the metadata quorum must run inside the simulation
with a simulated clock and network; pysyncobj (the maintained Python Raft) owns its own
threads, sockets and clock, so it cannot be driven step by step.
"""

from core.cluster.raft.messages import (
    AppendRequest,
    AppendResponse,
    Entry,
    Message,
    VoteRequest,
    VoteResponse,
)
from core.cluster.raft.node import NotLeaderError, RaftNode, Role
from core.cluster.raft.storage import FileRaftStorage, MemoryRaftStorage, RaftStorage

__all__ = [
    "AppendRequest",
    "AppendResponse",
    "Entry",
    "FileRaftStorage",
    "MemoryRaftStorage",
    "Message",
    "NotLeaderError",
    "RaftNode",
    "RaftStorage",
    "Role",
    "VoteRequest",
    "VoteResponse",
]
