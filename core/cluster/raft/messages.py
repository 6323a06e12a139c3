"""The four Raft messages and the log entry. Plain data: the node fills them, a transport
(TCP between controllers, or the simulated network in tests) carries them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AppendRequest", "AppendResponse", "Entry", "Message", "VoteRequest", "VoteResponse"]


@dataclass(frozen=True)
class Entry:
    """One log entry: the term of the leader that appended it and its payload. An empty
    payload is the no-op a new leader appends to commit its predecessors' entries."""

    term: int
    data: bytes


@dataclass(frozen=True)
class VoteRequest:
    src: int
    term: int
    last_log_index: int
    last_log_term: int


@dataclass(frozen=True)
class VoteResponse:
    src: int
    term: int
    granted: bool


@dataclass(frozen=True)
class AppendRequest:
    """Entries after ``prev_index`` (whose term is ``prev_term``); none is a heartbeat."""

    src: int
    term: int
    prev_index: int
    prev_term: int
    entries: tuple[Entry, ...]
    leader_commit: int


@dataclass(frozen=True)
class AppendResponse:
    """``match_index``: on success the last index now known to match the leader's log; on
    failure the follower's hint of where to retry (the index before the one to resend)."""

    src: int
    term: int
    success: bool
    match_index: int


Message = VoteRequest | VoteResponse | AppendRequest | AppendResponse
